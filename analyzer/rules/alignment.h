// The per-slot alignment's rules (alignment.cc): divergences (insertion, deletion, substitution)
// and streams that stopped, found by Engine::diagnoseComm on each communicator. A stream that
// stopped because its rank died adds that rank to Inferred::dead (the status list says so).
#pragma once

#include <optional>

#include "analyzer/engine.h"
#include "analyzer/verdict.h"

namespace ncclrec::analyzer::engine {

// The first divergence on a communicator with ops pending, in Engine::commOrder(): cause before
// symptom, it explains the waits on the other communicators.
std::optional<Verdict> pendingDivergence(const Engine& en, Inferred& inferred);
// The first divergence or stream that stopped on any communicator, in Engine::commOrder() (the
// table lets an earlier divergence of the same ranks explain it).
std::optional<Verdict> firstDivergenceOrStop(const Engine& en, Inferred& inferred);

}  // namespace ncclrec::analyzer::engine
