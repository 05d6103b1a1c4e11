// The p2p_stop rule (p2p_stop.cc).
#pragma once

#include <optional>

#include "analyzer/engine.h"
#include "analyzer/verdict.h"

namespace ncclrec::analyzer::engine {

// A send or receive waiting for a rank that left NCCL without posting its counterpart (stuck in
// host code, killed, exited early): that rank's stop (rank_exited, rank_crashed,
// rank_stuck_in_host). A rank found gone from its peers' failed calls joins Inferred::dead.
std::optional<Verdict> findP2pStop(const Engine& en, Inferred& inferred);

}  // namespace ncclrec::analyzer::engine
