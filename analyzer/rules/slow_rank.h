// The slow_rank rule: nothing pending, and one rank is consistently the last to reach each
// collective (findSlowRank, health.h).
#pragma once

#include <optional>

#include "analyzer/engine.h"
#include "analyzer/verdict.h"

namespace ncclrec::analyzer::engine {

std::optional<Verdict> findSlowRankWhenNothingPends(const Engine& en);

}  // namespace ncclrec::analyzer::engine
