// The connections of one communicator from its ranks' transport counters (format/model.h Link):
// each direction of each (rank, peer, channel) with what the sender says it handed the network
// and what the receiver says arrived, cumulative over the communicator's life (steps complete in
// order on a connection, so the difference is what is in flight or lost). The transport_stalled
// rule decides from them, and ncclrec-top shows them for a stuck collective: one pairing for
// both. Pure functions; no Engine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "format/model.h"

namespace ncclrec::analyzer {

// How long ago a connection's sender must have sent its last step, and its receiver received
// anything, for the steps in between to count as lost (in flight for less is traffic).
inline constexpr int64_t kTransportStallNs = 1'000'000'000;

// One member of the communicator: its rank there, its links (every communicator's: the ones of
// `comm_id` are picked), and the ring index of the op it waits in (kNoLinkOp: none). `ahead`: it
// got all its data of the op the other ends wait in, and `op_index` is the next one: what it sent
// in that one to an end still in the earlier op is not counted (that end has not asked for it).
struct LinkEnd {
  int comm_rank = -1;
  const std::vector<format::Link>* links = nullptr;
  uint64_t op_index = format::kNoLinkOp;
  bool ahead = false;
};

struct Connection {
  int from = -1, to = -1;  // communicator ranks
  int channel = 0;
  size_t from_end = SIZE_MAX, to_end = SIZE_MAX;  // index into the ends; SIZE_MAX: not recorded
  bool has_send = false, has_recv = false;
  uint64_t sent = 0, received = 0;
  int64_t sent_ns = 0;      // when the sender's counter last grew (0: never)
  int64_t received_ns = 0;  // ... the receiver's, else when its newest proxy op began
  // The receiver's newest proxy op, when it is the op the receiver waits in: its steps, and how
  // many of them arrived.
  uint32_t op_steps = 0, op_received = 0;
  bool stalled = false;  // set by connectionsOf(): see stalled()
};

// Sent long enough ago to have arrived, and nothing arrived for as long: both ends recorded, the
// sender ahead, its last send and the receiver's last arrival kTransportStallNs or more before
// `now_ns`.
bool stalled(const Connection& k, int64_t now_ns);

// Every connection of `comm_id` the ends recorded, ascending by (from, to, channel), with
// `stalled` set as of `now_ns`.
std::vector<Connection> connectionsOf(uint64_t comm_id, const std::vector<LinkEnd>& ends,
                                      int64_t now_ns);

}  // namespace ncclrec::analyzer
