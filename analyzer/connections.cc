#include "analyzer/connections.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace ncclrec::analyzer {

bool stalled(const Connection& k, int64_t now_ns) {
  return k.has_send && k.has_recv && k.sent > k.received &&
         now_ns - k.sent_ns >= kTransportStallNs && now_ns - k.received_ns >= kTransportStallNs;
}

std::vector<Connection> connectionsOf(uint64_t comm_id, const std::vector<LinkEnd>& ends,
                                      int64_t now_ns) {
  std::map<std::tuple<int, int, int>, Connection> by_key;
  std::map<int, bool> ahead;
  for (const LinkEnd& end : ends) ahead[end.comm_rank] = end.ahead;
  for (size_t i = 0; i < ends.size(); ++i) {
    const LinkEnd& end = ends[i];
    if (end.links == nullptr) continue;
    for (const format::Link& l : *end.links) {
      if (l.comm_id != comm_id || l.isKernel()) continue;
      const int from = l.is_send ? end.comm_rank : l.peer;
      const int to = l.is_send ? l.peer : end.comm_rank;
      Connection& k = by_key[{from, to, l.channel}];
      k.from = from;
      k.to = to;
      k.channel = l.channel;
      if (l.is_send) {
        k.from_end = i;
        k.has_send = true;
        k.sent = l.moved;
        k.sent_ns = l.moved > 0 ? l.moved_ns : 0;
        const uint32_t next = l.op_index == end.op_index ? l.opSteps(l.moved) : 0;
        if (end.ahead && !ahead[to] && next > 0) {
          // The steps of the next op: before it began, the sender had sent the rest.
          k.sent = l.moved - next;
          k.sent_ns = k.sent > 0 ? l.op_start_ns : 0;
        }
      } else {
        k.to_end = i;
        k.has_recv = true;
        k.received = l.moved;
        k.received_ns = std::max(l.moved > 0 ? l.moved_ns : 0, l.op_start_ns);
        if (end.op_index != format::kNoLinkOp && l.op_index == end.op_index) {
          k.op_steps = l.op_steps;
          k.op_received = l.opSteps(l.moved);
        }
      }
    }
  }
  std::vector<Connection> out;
  out.reserve(by_key.size());
  for (auto& [key, k] : by_key) {
    k.stalled = stalled(k, now_ns);
    out.push_back(k);
  }
  return out;
}

}  // namespace ncclrec::analyzer
