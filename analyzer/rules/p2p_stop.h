// The p2p_stop rule (p2p_stop.cc).
#pragma once

#include <optional>

#include "analyzer/engine.h"
#include "analyzer/verdict.h"

namespace ncclrec::analyzer::engine {

// A send or receive waiting for a rank that left NCCL without posting its counterpart (stuck in
// host code, killed, exited early): that rank's stop (rank_exited, rank_crashed,
// rank_stuck_in_host).
std::optional<Verdict> findP2pStop(Engine& en);

}  // namespace ncclrec::analyzer::engine
