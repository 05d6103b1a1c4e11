// The partial_split rule: ncclCommSplit called by only some ranks of the parent (comm_calls.h
// has what the rules about calls around the slots share).
#pragma once

#include <optional>

#include "analyzer/callsite.h"
#include "analyzer/verdict.h"
#include "format/reader.h"

namespace ncclrec::analyzer {

// Ranks of a communicator that called ncclCommSplit on it a different number of times, where the
// ones that called it fewer times went on past the point where the others split
// (skipped_collective), or where a minority called it (rank_gated_collective), and some op on the
// parent or the split itself did not complete.
std::optional<Verdict> findPartialSplit(const format::LoadedSet& set, const CallSites& sites);

}  // namespace ncclrec::analyzer
