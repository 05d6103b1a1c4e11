// The early_comm_end rule: a communicator ended by a rank that goes on while its peers still
// issue ops on it. One of the rules about calls around a communicator's slots (with
// lone_collective, partial_split, group_peer_skip; what they share: comm_calls.h): seen from the
// slots, each looks like a rank that stopped, or like the waiting rank's fault.
#pragma once

#include <optional>

#include "analyzer/callsite.h"
#include "analyzer/verdict.h"
#include "format/reader.h"

namespace ncclrec::analyzer {

// ncclCommAbort (comm_aborted), or ncclCommDestroy followed by more NCCL calls
// (comm_destroyed), by a rank whose own ops on that communicator had all completed, while other
// ranks issued ops on it past the aborting rank's last one. A rank that destroys and then exits is
// left to rank_exited; one that aborts after an error of its own is reacting, not deviating.
std::optional<Verdict> findEarlyCommEnd(const format::LoadedSet& set, const CallSites& sites);

}  // namespace ncclrec::analyzer
