// The lone_collective rule: a collective a minority issued on a communicator the others were done
// with (comm_calls.h has what the rules about calls around the slots share).
#pragma once

#include <optional>

#include "analyzer/callsite.h"
#include "analyzer/verdict.h"
#include "format/reader.h"

namespace ncclrec::analyzer {

// A collective (rank_gated_collective) on a communicator that the other ranks holding it never
// issued one on: a minority issued it and it never completed, while at least one of the others
// destroyed or finalized the communicator without a collective (it was done with it).
std::optional<Verdict> findLoneCollective(const format::LoadedSet& set, const CallSites& sites);

}  // namespace ncclrec::analyzer
