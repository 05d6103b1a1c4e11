// What the rules of hangs inside a collective every rank entered share (transport_stalled,
// device_stalled): the op the ranks of a communicator wait in when nothing of the program
// diverged, and where its ranks are.
#pragma once

#include <string>
#include <vector>

#include "analyzer/connections.h"
#include "analyzer/engine.h"
#include "analyzer/headlines_liveness.h"

namespace ncclrec::analyzer::engine {

// Every stream's newest op on `c` is pending, they are at most one apart (the ranks that got all
// their data of op N finish it while those whose data was lost still wait in it: a ring's, or a
// gather's root while the senders go on), and every stream's op N is the same call (op, site,
// shape): the newest of those in it, the one before the newest of those that went on, whatever
// they issued next. Each rank still runs. The op the ranks are in (the earlier one when they
// straddle two); nullptr otherwise.
const EventRecord* opEveryRunningRankIsIn(const Engine& en, const CommStreams& c);

// The connections of `c` from its ranks' link counters, each stream an end waiting in its newest
// op, `ahead` when that op is after the earliest of them (connections.h).
std::vector<Connection> connectionsOf(const Engine& en, const CommStreams& c);

// Stream `stream`'s rank and host (headlines_liveness.h rankHostPhrase: "rank 3 (host nodeb)").
RankHost rankHostOf(const Engine& en, const CommStreams& c, size_t stream);

}  // namespace ncclrec::analyzer::engine
