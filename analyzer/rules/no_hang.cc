#include "analyzer/rules/no_hang.h"

#include <optional>
#include <string>
#include <vector>

#include "analyzer/headlines_outcomes.h"
#include "analyzer/rank_ops.h"

namespace ncclrec::analyzer::engine {

std::optional<Verdict> findNoHang(const Engine& en) {
  if (en.firstPending() != nullptr) return std::nullopt;
  size_t collectives = 0;
  for (const CommStreams& c : en.comms()) {
    for (const Stream& s : c.streams) collectives += s.ops.size();
  }
  const size_t comms = en.comms().size();
  Verdict v;
  v.cls = VerdictClass::kNoHang;
  v.headline = noHangHeadline({collectives, comms, en.set().ranks.size()});
  const std::vector<int> no_data = en.ranksWithNoData();
  if (!no_data.empty()) v.missing.push_back("no data for " + ranksWord(no_data));
  return v;
}

}  // namespace ncclrec::analyzer::engine
