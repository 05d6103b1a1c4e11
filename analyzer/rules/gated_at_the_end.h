// The gated_at_the_end rule: on one communicator, a minority of its ranks issued one collective
// more than the others, at a call site the communicator never saw before, and the others will not
// issue it: each completed every op it issued there and then ended the communicator (destroyed,
// finalized or aborted it), exited, or went on to an op elsewhere that never completed (it waits,
// or failed, for the minority). The minority's op waits, or failed because the others left:
// rank_gated_collective naming the minority (docs/analyzer.md, "Culprits and waiters": the ranks
// that ended normally did not stop early). A rank that completed its newest op and is in host code
// could still issue it: no finding then (the others may just be late).
#pragma once

#include <optional>

#include "analyzer/engine.h"
#include "analyzer/verdict.h"

namespace ncclrec::analyzer::engine {

std::optional<Verdict> findGatedAtTheEnd(const Engine& en);

}  // namespace ncclrec::analyzer::engine
