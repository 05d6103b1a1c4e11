// Hangs whose cause is not one communicator's slots but a call around them: a communicator ended
// (ncclCommAbort, or ncclCommDestroy by a rank that goes on) while its peers still issue ops on
// it, ncclCommSplit called by only some ranks of the parent, and a grouped exchange of sends and
// receives in which one rank left out a peer. Used by diagnose() before the per-slot alignment:
// seen from one communicator, each of these looks like a rank that stopped, or like the waiting
// rank's fault. Each verdict names the rank that deviated, the call and its call site. One file per
// rule under rules/ (early_comm_end.cc, lone_collective.cc, partial_split.cc, group_peer_skip.cc),
// with what they share about a rank's calls on a communicator in rules/comm_calls.h.
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

// A collective (rank_gated_collective) on a communicator that the other ranks holding it never
// issued one on: a minority issued it and it never completed, while at least one of the others
// destroyed or finalized the communicator without a collective (it was done with it).
std::optional<Verdict> findLoneCollective(const format::LoadedSet& set, const CallSites& sites);

// Ranks of a communicator that called ncclCommSplit on it a different number of times, where the
// ones that called it fewer times went on past the point where the others split
// (skipped_collective), or where a minority called it (rank_gated_collective), and some op on the
// parent or the split itself did not complete.
std::optional<Verdict> findPartialSplit(const format::LoadedSet& set, const CallSites& sites);

// A pending send or receive of a ncclGroupStart/End exchange whose peer's group at the same
// position (the n-th group with point-to-point ops on that communicator, on both ranks) posted
// sends and receives to other ranks but none with this one: the peer skipped it (p2p_mismatch,
// culprit the peer).
std::optional<Verdict> findGroupPeerSkip(const format::LoadedSet& set, const CallSites& sites);

}  // namespace ncclrec::analyzer
