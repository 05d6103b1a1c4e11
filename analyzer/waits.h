// Waits that span more than one collective stream: point-to-point sends and receives matched by
// peer and per-peer sequence number, and the wait-for graph across communicators, whose cycle is
// a deadlock. Used by diagnose(); separate because they pair ops by peer, not by slot.
#pragma once

#include <optional>

#include "analyzer/callsite.h"
#include "analyzer/verdict.h"
#include "format/reader.h"

namespace ncclrec::analyzer {

// A pending ncclSend/ncclRecv whose peer posted no counterpart with the same per-peer sequence
// number, or one with another count or datatype. Peers with no data are not judged.
std::optional<Verdict> findP2pMismatch(const format::LoadedSet& set, const CallSites& sites);

// Ranks each blocked in a collective, each waiting for a rank that has not reached that
// collective, around a cycle: e.g. rank 0 in comm A waits for rank 1, which waits in comm B for
// rank 0.
std::optional<Verdict> findWaitCycle(const format::LoadedSet& set, const CallSites& sites);

}  // namespace ncclrec::analyzer
