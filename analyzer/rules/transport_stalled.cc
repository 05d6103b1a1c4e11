#include "analyzer/rules/transport_stalled.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "analyzer/connections.h"
#include "analyzer/phrases.h"
#include "analyzer/rules/inside_one_op.h"

namespace ncclrec::analyzer::engine {
namespace {

// What the stalled connections have in common: "the network path a -> b", "the network between
// a and b" (both directions stalled), "the path between the two processes on host a", or the
// hosts involved when the connections span several pairs.
std::string suspectPath(const Engine& en, const CommStreams& c,
                        const std::vector<const Connection*>& stalled) {
  auto host = [&](size_t stream) { return en.set().ranks[c.streams[stream].rank].host; };
  std::set<std::pair<std::string, std::string>> paths;
  for (const Connection* k : stalled) paths.emplace(host(k->from_end), host(k->to_end));
  const auto& [a, b] = *paths.begin();
  if (paths.size() == 1) {
    if (a.empty() || b.empty()) return "the path between them (their hosts are not recorded)";
    if (a == b) return "the path between the two processes on host " + a;
    return "the network path " + a + " -> " + b;
  }
  if (paths.size() == 2 && paths.count({b, a}) != 0 && a != b) {
    return "the network between " + a + " and " + b + " (both directions stalled)";
  }
  std::set<std::string> hosts;
  for (const auto& [x, y] : paths) {
    hosts.insert(x);
    hosts.insert(y);
  }
  std::string list;
  for (const std::string& h : hosts) list += (list.empty() ? "" : ", ") + h;
  return "the network of hosts " + list;
}

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
  const std::string name = std::string(format::opName(v.op)) + " #" + std::to_string(v.seq);
  const std::string from_rank = "rank " + std::to_string(en.ranksOf(*c, {k.from_end}).front());
  const std::string to_rank = "rank " + std::to_string(en.ranksOf(*c, {k.to_end}).front());
  const uint64_t lost = k.sent - k.received;
  const bool straddle = std::any_of(c->streams.begin(), c->streams.end(), [&](const Stream& s) {
    return s.ops.back().e->op_seq != op->op_seq;
  });
  v.headline = "data stopped moving between " + rankOnHost(en, *c, k.from_end) + " and " +
               rankOnHost(en, *c, k.to_end) + " inside " + name + " on comm " +
               shortCommId(v.comm_id) + " from " + describeCallSite(v.site) +
               (!straddle ? ", which every rank issued with the same arguments: "
                          : " (the ranks that got all their data are in the next one): ") +
               from_rank + " sent " + std::to_string(lost) + (lost == 1 ? " step" : " steps") +
               " on channel " + std::to_string(k.channel) + " that " + to_rank +
               " never received (its last send at " + clockTime(k.sent_ns) + "); " + to_rank;
  if (k.op_steps > 0) {
    v.headline += " has " + std::to_string(k.op_received) + " of the " +
                  std::to_string(k.op_steps) + " steps of #" + std::to_string(v.seq) + " and";
  }
  v.headline += " received nothing for " + seconds(en.now() - k.received_ns);
  if (stalled.size() > 1) {
    v.headline += "; " + std::to_string(stalled.size() - 1) + " more connection" +
                  (stalled.size() > 2 ? "s" : "") + " stalled so";
  }
  if (!v.waiting.empty()) {
    v.headline +=
        "; " + ranksWord(v.waiting) + (v.waiting.size() == 1 ? " waits" : " wait") + " behind it";
  }
  v.headline += "; suspect " + suspectPath(en, *c, stalled);
  en.addEvidence(*c, receiver.ops.size() - 1, v);
  v.tables.push_back(connectionTable(en, *c, conns, name));
  return v;
}

}  // namespace ncclrec::analyzer::engine
