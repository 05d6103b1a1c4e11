// The transport_stalled rule: every rank of a communicator waits in the same collective (or, in a
// ring, some in the next one: the ranks that got all their data of op N finished it) and every
// rank runs, but data stopped moving on a connection: the sender's transport counters
// (format/model.h Link, from NCCL's proxy events or hostnccl's messages) say it handed steps to
// the network that the receiver's counters say never arrived, the last of them long enough ago,
// and the receiver has seen nothing new on that connection for as long. Steps complete in order
// on a connection, so the cumulative counts tell without aligning ops. The other connections then
// wait behind it (a ring or tree stalls as a whole), so the culprit is the pair, named with its
// hosts: the network path between them, a NIC, a cable or a switch port. The pairing of the
// counters into connections, and what "stalled" means, are analyzer/connections.h's.
//
// In the table before the per-slot alignment (rules.cc): ranks that straddle two ops look like a
// rank that stopped between ops, which they are not (a ring's ranks that got their data of op N,
// or a gather's senders, go on to N + 1 while the receiver that lost data still waits in N).
// Arguments that differ (a size mismatch also leaves steps unreceived) are not this rule's: every
// rank's op N must be the same call. What the ranks ahead sent in N + 1 to a rank still in N is
// not lost (connections.h LinkEnd::ahead). A rank not running (frozen counters) is
// rank_not_running's.
#pragma once

#include <optional>

#include "analyzer/engine.h"
#include "analyzer/verdict.h"

namespace ncclrec::analyzer::engine {

// transport_stalled on the first communicator with ops pending (Engine::firstPending) when every
// rank's newest op there is the same call, pending, at most one apart, every rank runs, and at
// least one connection is stalled; nullopt otherwise (no transport counters: NCCL's profiler
// plugin not in use).
std::optional<Verdict> findTransportStalled(const Engine& en);

}  // namespace ncclrec::analyzer::engine
