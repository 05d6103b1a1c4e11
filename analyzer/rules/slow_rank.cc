#include "analyzer/rules/slow_rank.h"

#include <optional>

#include "analyzer/health.h"

namespace ncclrec::analyzer::engine {

std::optional<Verdict> findSlowRankWhenNothingPends(const Engine& en) {
  if (en.firstPending() != nullptr) return std::nullopt;
  return findSlowRank(en.set(), en.callsites());
}

}  // namespace ncclrec::analyzer::engine
