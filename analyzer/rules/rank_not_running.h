// The rank_not_running rule: every rank of a communicator entered the same collective (or send
// and receive slot) with the same arguments, and one of them stopped running inside it, so the
// others wait for data that never comes. Nothing of the program diverged: the verdict comes from
// liveness. A rank is not running when the launcher (cxxrun, ncclrec-watch) saw its process
// stopped or in uninterruptible sleep (RankData::process_state), or, without the launcher's
// facts, when its black box stopped beating (a stale heartbeat) and it wrote no dump while its
// peers' recordings are fresh. A rank that stopped between two ops is a stream that stopped
// (truncation.cc, StopKind::kNotRunning).
#pragma once

#include <optional>

#include "analyzer/engine.h"
#include "analyzer/verdict.h"

namespace ncclrec::analyzer::engine {

// rank_not_running on the first communicator with ops pending (Engine::firstPending) when every
// rank's newest op there is the same one, still pending, and some but not all of those ranks are
// not running; nullopt otherwise.
std::optional<Verdict> findRankNotRunning(const Engine& en);

}  // namespace ncclrec::analyzer::engine
