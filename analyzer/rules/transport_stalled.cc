#include "analyzer/rules/transport_stalled.h"

#include <algorithm>
#include <string>
#include <vector>

#include "analyzer/connections.h"
#include "analyzer/phrases.h"
#include "analyzer/rules/inside_one_op.h"

namespace ncclrec::analyzer::engine {
namespace {

EvidenceTable connectionTable(const Engine& en, const CommStreams& c,
                              const std::vector<Connection>& conns, const std::string& name) {
  EvidenceTable t;
  t.title = "transport progress on comm " + shortCommId(c.comm_id) + " around " + name +
            " per connection (steps since the communicator began)";
  t.columns = {"from", "to", "channel", "sent", "received", "behind", "last_sent", "last_received"};
  for (const Connection& k : conns) {
    auto rank = [&](size_t stream, int comm_rank) {
      return stream == SIZE_MAX ? TableCell::of(std::to_string(comm_rank) + " (comm rank)")
                                : TableCell::of(en.ranksOf(c, {stream}).front());
    };
    const bool both = k.has_send && k.has_recv;
    t.rows.push_back(
        {rank(k.from_end, k.from), rank(k.to_end, k.to), TableCell::of(k.channel),
         k.has_send ? TableCell::of(static_cast<int64_t>(k.sent)) : TableCell::none(),
         k.has_recv ? TableCell::of(static_cast<int64_t>(k.received)) : TableCell::none(),
         both ? TableCell::of(static_cast<int64_t>(k.sent) - static_cast<int64_t>(k.received))
              : TableCell::none(),
         TableCell::of(clockTime(k.sent_ns)),
         TableCell::of(clockTime(k.has_recv && k.received > 0 ? k.received_ns : 0))});
    t.marked.push_back(k.stalled);
  }
  return t;
}

}  // namespace

std::optional<Verdict> findTransportStalled(const Engine& en) {
  const CommStreams* c = en.firstPending();
  if (c == nullptr || c->streams.size() < 2) return std::nullopt;
  const EventRecord* op = opEveryRunningRankIsIn(en, *c);
  if (op == nullptr) return std::nullopt;
  const std::vector<Connection> conns = connectionsOf(en, *c);
  std::vector<const Connection*> stalled;
  for (const Connection& k : conns) {
    if (k.stalled) stalled.push_back(&k);
  }
  if (stalled.empty()) return std::nullopt;
  std::vector<size_t> ends, others;
  for (const Connection* k : stalled) {
    ends.push_back(k->from_end);
    ends.push_back(k->to_end);
  }
  std::sort(ends.begin(), ends.end());
  ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
  for (size_t i = 0; i < c->streams.size(); ++i) {
    if (!std::binary_search(ends.begin(), ends.end(), i)) others.push_back(i);
  }
  const Connection& k = *stalled.front();
  const Stream& receiver = c->streams[k.to_end];
  const EventRecord& waits_in = *receiver.ops.back().e;
  Verdict v;
  v.cls = VerdictClass::kTransportStalled;
  v.ranks = en.ranksOf(*c, ends);
  v.waiting = en.ranksOf(*c, others);
  v.comm_id = c->comm_id;
  v.seq = waits_in.op_seq;
  v.op = waits_in.op;
  v.site = en.siteAt(en.set().ranks[receiver.rank], waits_in);
  TransportStall s;
  s.from = rankHostOf(en, *c, k.from_end);
  s.to = rankHostOf(en, *c, k.to_end);
  s.straddle = std::any_of(c->streams.begin(), c->streams.end(),
                           [&](const Stream& st) { return st.ops.back().e->op_seq != op->op_seq; });
  s.lost = k.sent - k.received;
  s.channel = k.channel;
  s.last_sent_ns = k.sent_ns;
  s.op_received = k.op_received;
  s.op_steps = k.op_steps;
  s.quiet_ns = en.now() - k.received_ns;
  s.more = stalled.size() - 1;
  auto host = [&](size_t stream) { return en.set().ranks[c->streams[stream].rank].host; };
  for (const Connection* x : stalled) s.paths.emplace(host(x->from_end), host(x->to_end));
  v.headline = transportStalledHeadline(v, s);
  en.addEvidence(*c, receiver.ops.size() - 1, v);
  const std::string name = std::string(format::opName(v.op)) + " #" + std::to_string(v.seq);
  v.tables.push_back(connectionTable(en, *c, conns, name));
  return v;
}

}  // namespace ncclrec::analyzer::engine
