// The wait_cycle rule: the wait-for graph across communicators, whose cycle is a deadlock. Before
// the per-slot alignment: it pairs ops across communicators, not by slot.
#pragma once

#include <optional>

#include "analyzer/engine.h"
#include "analyzer/verdict.h"

namespace ncclrec::analyzer::engine {

// Ranks each blocked in a collective, each waiting for a rank that has not reached that
// collective, around a cycle: e.g. rank 0 in comm A waits for rank 1, which waits in comm B for
// rank 0. Reads the edges of the Engine's wait-for graph (Engine::waits()) of both kinds.
std::optional<Verdict> findWaitCycle(const Engine& en);

}  // namespace ncclrec::analyzer::engine
