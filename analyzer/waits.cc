#include "analyzer/waits.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "analyzer/cycle_blame.h"
#include "analyzer/p2p_blame.h"
#include "analyzer/phrases.h"
#include "analyzer/rank_ops.h"

namespace ncclrec::analyzer {
namespace {

using format::EventRecord;
using format::EventState;
using format::OpType;
using format::RankData;

// Rows of the p2p table on each side of the unmatched seq.
constexpr uint64_t kP2pContext = 2;

bool pending(const EventRecord& e) {
  return e.state == EventState::kEnqueued || e.state == EventState::kStarted;
}

std::string opAt(const EventRecord& e, const CallSite& site) {
  return std::string(format::opName(e.op)) + " #" + std::to_string(e.op_seq) + " on comm " +
         shortCommId(e.commId()) + " from " + describeCallSite(site);
}

using p2p::GlobalOf;
using p2p::Located;
using p2p::Posted;

// A receive `w` with no matching send, from a peer that is not blocked in a send or receive: in a
// ring or pipeline the peer relays what it receives from its own predecessors. When it completed
// more receives from them than it posted sends to `w`'s rank, it dropped a send: it is the culprit
// and `w`'s rank waits for it (p2p accounting per pair, docs/analyzer.md).
std::optional<Verdict> relayCulprit(const Posted& posted, const GlobalOf& global_of,
                                    const Located& w, const CallSites& sites) {
  const EventRecord& e = *w.event;
  const int relay = e.peer();
  size_t received = 0;
  std::vector<int> sources;  // comm ranks it received from
  for (const auto& [key, calls] : posted) {
    const auto& [comm, op, me, from] = key;
    if (comm != e.commId() || op != OpType::kRecv || me != relay || from == e.rank()) continue;
    size_t done = 0;
    for (const auto& [seq, call] : calls) done += call.event->state == EventState::kCompleted;
    if (done > 0) sources.push_back(from);
    received += done;
  }
  const auto sends = posted.find({e.commId(), OpType::kSend, relay, e.rank()});
  const size_t sent = sends == posted.end() ? 0 : sends->second.size();
  if (sources.empty() || received <= sent || sent >= e.op_seq) return std::nullopt;
  const auto globalOf = [&](int r) {
    const auto it = global_of.find({e.commId(), r});
    return it != global_of.end() ? it->second : -1;
  };
  std::vector<int> from_global;
  for (int s : sources) from_global.push_back(globalOf(s));
  std::sort(from_global.begin(), from_global.end());
  Verdict v;
  v.cls = VerdictClass::kP2pMismatch;
  v.ranks = {globalOf(relay)};
  v.comm_id = e.commId();
  v.seq = sent + 1;  // the send it never posted
  v.op = OpType::kSend;
  const CallSite waiter_site = callSiteOf(*w.rank, e, sites);
  std::string last_send;
  if (sends != posted.end()) {
    const Located& last = sends->second.rbegin()->second;
    v.site = callSiteOf(*last.rank, *last.event, sites);
    last_send = " (the last, #" + std::to_string(last.event->op_seq) + ", from " +
                describeCallSite(v.site) + ")";
  }
  v.stacks = {v.site, waiter_site};
  if (!v.site.known()) v.stacks.erase(v.stacks.begin());
  v.headline = "rank " + std::to_string(v.ranks[0]) + " completed " + std::to_string(received) +
               " ncclRecvs from " + ranksWord(from_global) + " but posted " + std::to_string(sent) +
               " ncclSends to rank " + std::to_string(w.rank->global_rank) + " on comm " +
               shortCommId(e.commId()) + last_send;
  return v;
}

// The send or receive `r` is blocked in on a communicator other than `comm` (its oldest pending
// one), or nullptr: none, or a collective pending as well (then the collective holds it).
const EventRecord* blockedInP2pElsewhere(const RankData& r, uint64_t comm) {
  const EventRecord* there = nullptr;
  for (const EventRecord& e : r.events) {
    if (!pending(e)) continue;
    if (format::isCollective(e.op)) return nullptr;
    if (there == nullptr && format::isP2p(e.op) && e.commId() != comm) there = &e;
  }
  return there;
}

}  // namespace

std::optional<Verdict> findP2pMismatch(const format::LoadedSet& set, const CallSites& sites) {
  Posted posted;
  GlobalOf global_of;
  std::vector<Located> waiting;
  for (const RankData& r : set.ranks) {
    uint64_t last_comm = 0;
    for (const EventRecord& e : r.events) {
      if (e.commId() == 0 || e.rank() < 0) continue;
      if (e.commId() != last_comm) {
        global_of[{e.commId(), e.rank()}] = r.global_rank;
        last_comm = e.commId();
      }
      if (!format::isP2p(e.op) || rejected(e) || e.state == EventState::kEmpty) continue;
      posted[{e.commId(), e.op, e.rank(), e.peer()}][e.op_seq] = Located{&r, &e};
      // A call that failed because its peer left had waited for it as well.
      if (pending(e) || lostPeer(e)) waiting.push_back(Located{&r, &e});
    }
    for (const format::Comm& c : r.comms) {
      if (c.comm_id != 0 && c.rank >= 0) global_of[{c.comm_id, c.rank}] = r.global_rank;
    }
  }
  std::sort(waiting.begin(), waiting.end(), [](const Located& a, const Located& b) {
    return a.event->enqueueNs() < b.event->enqueueNs();
  });
  // The pair's sends and receives, both directions, by per-peer seq around `seq` (the unmatched
  // one, in the direction from -> to): who posted what, and what is missing.
  const auto pairTable = [&](uint64_t comm, int from, int to, uint64_t seq) {
    EvidenceTable t;
    const auto globalOf = [&](int r) {
      const auto it = global_of.find({comm, r});
      return it != global_of.end() ? it->second : -1;
    };
    const int g_from = globalOf(from), g_to = globalOf(to);
    t.title = "sends and receives between ranks " + std::to_string(std::min(g_from, g_to)) +
              " and " + std::to_string(std::max(g_from, g_to)) + " on comm " + shortCommId(comm);
    t.columns = {"from", "to", "seq", "send", "recv"};
    for (const auto& [a, b] : {std::pair{from, to}, std::pair{to, from}}) {
      const auto sends = posted.find({comm, OpType::kSend, a, b});
      const auto recvs = posted.find({comm, OpType::kRecv, b, a});
      uint64_t last = 0;
      if (sends != posted.end()) last = std::max(last, sends->second.rbegin()->first);
      if (recvs != posted.end()) last = std::max(last, recvs->second.rbegin()->first);
      // The reverse direction is shown around the same seq, or around its newest when shorter.
      const uint64_t center = std::min(seq, last);
      const uint64_t lo = center > kP2pContext ? center - kP2pContext : 1;
      for (uint64_t q = lo; q <= center + kP2pContext && q <= std::max(last, seq); ++q) {
        const auto cellOf = [&](const auto& list) {
          if (list == posted.end()) return TableCell::none();
          const auto it = list->second.find(q);
          if (it == list->second.end()) return TableCell::none();
          return TableCell::of(evidenceOpOf(*it->second.rank, *it->second.event, sites));
        };
        TableCell send = cellOf(sends), recv = cellOf(recvs);
        if (send.kind == TableCell::Kind::kNone && recv.kind == TableCell::Kind::kNone) continue;
        const int ga = a == from ? g_from : g_to, gb = a == from ? g_to : g_from;
        t.rows.push_back({TableCell::of(int64_t{ga}), TableCell::of(int64_t{gb}),
                          TableCell::of(static_cast<int64_t>(q)), std::move(send),
                          std::move(recv)});
        t.marked.push_back(a == from && q == seq);
      }
    }
    return t;
  };
  // Whether comm rank `r` of `comm` is itself blocked in a send or receive on it: then it cannot
  // post what its peer waits for, and that wait is a symptom of its own.
  const auto blockedInP2p = [&](uint64_t comm, int r) {
    return std::any_of(waiting.begin(), waiting.end(), [&](const Located& x) {
      return x.event->commId() == comm && x.event->rank() == r && pending(*x.event);
    });
  };
  std::map<std::pair<const RankData*, uint64_t>, bool> held;  // p2p::heldByChainOn, once each
  const auto heldByChain = [&](const RankData& peer, uint64_t comm) {
    const auto [it, added] = held.try_emplace({&peer, comm}, false);
    if (added) {
      it->second =
          p2p::heldByChainOn(set.ranks, peer, comm, [&](int r) { return blockedInP2p(comm, r); });
    }
    return it->second;
  };
  std::map<int, const RankData*> rank_data;  // global rank -> its recording
  for (const RankData& r : set.ranks) rank_data[r.global_rank] = &r;
  std::optional<Verdict> symptom;  // the first unmatched wait whose peer is blocked as well
  for (const Located& w : waiting) {
    const EventRecord& e = *w.event;
    const auto peer = global_of.find({e.commId(), e.peer()});
    if (peer == global_of.end()) continue;  // no data for the peer: nothing to judge by
    const auto peer_data = rank_data.find(peer->second);
    if (peer_data == rank_data.end()) continue;
    // A peer that left NCCL without ending the communicator stopped (a truncation, p2p_stop.cc);
    // a failed call is judged here only when its peer finished its work and left.
    if (p2p::stoppedIn(*peer_data->second, e.commId()) || p2p::aborted(*peer_data->second)) {
      continue;
    }
    if (!pending(e) && !p2p::finishedComm(*peer_data->second, e.commId())) continue;
    const OpType other = e.op == OpType::kSend ? OpType::kRecv : OpType::kSend;
    const auto list = posted.find({e.commId(), other, e.peer(), e.rank()});
    const bool unmatched = list == posted.end() || !list->second.contains(e.op_seq);
    // A peer blocked in a send or receive on another communicator: by its own history it has yet
    // to reach what `e` waits for (held there: a symptom), or it closed that run short and went on
    // (faultgen seed 222: two pipelines on two communicators whose ends wait on each other).
    p2p::Standing peer_standing = p2p::Standing::kUnknown;
    if (unmatched && pending(e) && !blockedInP2p(e.commId(), e.peer())) {
      if (const EventRecord* there = blockedInP2pElsewhere(*peer_data->second, e.commId())) {
        peer_standing = p2p::standing(
            *peer_data->second, *there,
            [&](const EventRecord& x) {
              return x.commId() == e.commId() && x.op == other && x.rank() == e.peer() &&
                     x.peer() == e.rank() && !rejected(x) && x.state != EventState::kEmpty;
            },
            sites);
      }
    }
    if (peer_standing == p2p::Standing::kPast) {
      Verdict missing = p2p::missingCounterpart(posted, global_of, w, sites);
      missing.tables.push_back(e.op == OpType::kSend
                                   ? pairTable(e.commId(), e.rank(), e.peer(), e.op_seq)
                                   : pairTable(e.commId(), e.peer(), e.rank(), e.op_seq));
      return missing;
    }
    const bool held_elsewhere = peer_standing == p2p::Standing::kBehind;
    if (e.op == OpType::kRecv && !blockedInP2p(e.commId(), e.peer()) && !held_elsewhere) {
      if (std::optional<Verdict> relay = relayCulprit(posted, global_of, w, sites)) {
        relay->tables.push_back(pairTable(e.commId(), e.peer(), e.rank(), e.op_seq));
        return relay;
      }
    }
    const CallSite site = callSiteOf(*w.rank, e, sites);
    Verdict v;
    v.tables.push_back(e.op == OpType::kSend ? pairTable(e.commId(), e.rank(), e.peer(), e.op_seq)
                                             : pairTable(e.commId(), e.peer(), e.rank(), e.op_seq));
    v.cls = VerdictClass::kP2pMismatch;
    v.ranks = {w.rank->global_rank};
    v.comm_id = e.commId();
    v.seq = e.op_seq;
    v.op = e.op;
    v.site = site;
    v.stacks = {site};
    const std::string me = "rank " + std::to_string(w.rank->global_rank) + "'s " +
                           std::string(format::opName(e.op)) + " #" + std::to_string(e.op_seq) +
                           (e.op == OpType::kSend ? " to" : " from") + " rank " +
                           std::to_string(peer->second) + " on comm " + shortCommId(e.commId()) +
                           " from " + describeCallSite(site);
    const std::string counterpart = std::string(format::opName(other)) +
                                    (other == OpType::kSend ? "s to" : "s from") + " rank " +
                                    std::to_string(w.rank->global_rank);
    if (unmatched) {
      const size_t n = list == posted.end() ? 0 : list->second.size();
      v.headline = me + " has no matching " + std::string(format::opName(other)) + ": rank " +
                   std::to_string(peer->second) + " posted " + std::to_string(n) + " " +
                   counterpart;
      if (n > 0) {
        const Located& last = list->second.rbegin()->second;
        v.headline += " (the last, #" + std::to_string(last.event->op_seq) + ", from " +
                      describeCallSite(callSiteOf(*last.rank, *last.event, sites)) + ")";
      }
      if (blockedInP2p(e.commId(), e.peer()) || held_elsewhere) {
        if (!symptom) symptom = std::move(v);
        continue;
      }
      // Per pair and per role: the side that posted fewer than the other pairs moved skipped
      // one (the peer, which went on without it); else this rank posted one too many.
      const int from = e.op == OpType::kSend ? e.rank() : e.peer();
      const int to = e.op == OpType::kSend ? e.peer() : e.rank();
      // A peer blocked in a collective that waits for others than this rank is held up there:
      // the unmatched op is a symptom of that collective (the next wait is looked at, and the
      // communicators' alignment after that).
      // Unless all it waits for there wait in sends and receives of this communicator.
      if (!p2p::freeOrWaitsFor(*peer_data->second, *w.rank) &&
          !heldByChain(*peer_data->second, e.commId())) {
        continue;
      }
      if (p2p::shortSideDeviates(posted, e.commId(), from, to)) {
        Verdict missing = p2p::missingCounterpart(posted, global_of, w, sites);
        missing.tables = std::move(v.tables);
        return missing;
      }
      return v;
    }
    const Located& match = list->second.at(e.op_seq);
    if (match.event->count != e.count || match.event->dtype != e.dtype) {
      const CallSite other_site = callSiteOf(*match.rank, *match.event, sites);
      if (const std::optional<p2p::ShortRun> run = p2p::shortRunOf(posted, w, match, sites)) {
        const EventRecord& c = *run->culprit.event;
        const EventRecord& paired = run->culprit.event == &e ? *match.event : e;
        const CallSite c_site = callSiteOf(*run->culprit.rank, c, sites);
        const CallSite p_site =
            callSiteOf(run->culprit.rank == w.rank ? *match.rank : *w.rank, paired, sites);
        Verdict s;
        s.tables = std::move(v.tables);
        s.cls = VerdictClass::kP2pMismatch;
        s.ranks = {run->culprit.rank->global_rank};
        s.comm_id = c.commId();
        s.seq = c.op_seq;
        s.op = c.op;
        s.site = run->site;
        s.stacks = {run->site, c_site, p_site};
        const std::string who = "rank " + std::to_string(run->culprit.rank->global_rank);
        s.headline = who + " posted one " + std::string(format::opName(c.op)) + " fewer from " +
                     describeCallSite(run->site) + " than its loop does, so its next, " +
                     opAt(c, c_site) + " (" + std::to_string(c.count) + " " +
                     std::string(format::dataTypeName(c.dtype)) + "), met " + opAt(paired, p_site) +
                     " (" + std::to_string(paired.count) + " " +
                     std::string(format::dataTypeName(paired.dtype)) + ")";
        return s;
      }
      v.headline = me + " moves " + std::to_string(e.count) + " " +
                   std::string(format::dataTypeName(e.dtype)) + "; rank " +
                   std::to_string(peer->second) + "'s matching " +
                   std::string(format::opName(other)) + " from " + describeCallSite(other_site) +
                   " moves " + std::to_string(match.event->count) + " " +
                   std::string(format::dataTypeName(match.event->dtype));
      v.stacks.push_back(other_site);
      return v;
    }
  }
  return symptom;
}

std::optional<Verdict> findWaitCycle(const format::LoadedSet& set, const CallSites& sites) {
  // Per process: the collective it is blocked in (its oldest pending one), and how far each
  // communicator got (the highest seq it issued).
  std::map<std::pair<uint64_t, int>, size_t> process_of;  // (comm, comm rank) -> set index
  std::map<std::pair<size_t, uint64_t>, uint64_t> reached;
  std::map<uint64_t, std::set<int>> members;  // comm -> comm ranks
  std::vector<const EventRecord*> blocked(set.ranks.size(), nullptr);
  std::vector<std::vector<const EventRecord*>> pending_ops(set.ranks.size());
  for (size_t i = 0; i < set.ranks.size(); ++i) {
    for (const format::Comm& c : set.ranks[i].comms) {
      if (c.comm_id == 0 || c.rank < 0) continue;
      process_of[{c.comm_id, c.rank}] = i;
      members[c.comm_id].insert(c.rank);
    }
    uint64_t last_comm = 0;
    uint64_t* last_reached = nullptr;
    for (const EventRecord& e : set.ranks[i].events) {
      if (e.commId() == 0 || e.rank() < 0) continue;
      if (e.commId() != last_comm) {  // most consecutive events share one communicator
        process_of[{e.commId(), e.rank()}] = i;
        members[e.commId()].insert(e.rank());
        last_comm = e.commId();
        last_reached = &reached[{i, e.commId()}];
      }
      if (!format::isCollective(e.op) || rejected(e)) continue;
      *last_reached = std::max(*last_reached, e.op_seq);
      if (pending(e)) pending_ops[i].push_back(&e);
    }
  }
  // The lowest seq every member reached, per communicator: an op above it waits for someone.
  std::map<uint64_t, uint64_t> all_reached;
  for (const auto& [comm, ranks] : members) {
    uint64_t low = UINT64_MAX;
    for (int m : ranks) {
      const auto j = process_of.find({comm, m});
      const auto r = j == process_of.end() ? reached.end() : reached.find({j->second, comm});
      low = std::min(low, r == reached.end() ? uint64_t{0} : r->second);
    }
    all_reached[comm] = low;
  }
  // Blocked in its oldest pending collective that waits for a member; in a group whose other ops
  // completed on their peers (faultgen seed 1067: a rank's grouped all-reduce done on its peer,
  // the broadcast of that group skipped there), the one still waiting. Else its oldest.
  for (size_t i = 0; i < set.ranks.size(); ++i) {
    const EventRecord* waiting = nullptr;
    for (const EventRecord* e : pending_ops[i]) {
      if (blocked[i] == nullptr || e->enqueueNs() < blocked[i]->enqueueNs()) blocked[i] = e;
      if (all_reached[e->commId()] < e->op_seq &&
          (waiting == nullptr || e->enqueueNs() < waiting->enqueueNs())) {
        waiting = e;
      }
    }
    if (waiting != nullptr) blocked[i] = waiting;
  }
  // i waits for j: j belongs to the communicator i is blocked in and has not issued that seq.
  // Each communicator's processes sorted by how far they got, so a blocked process looks only at
  // those behind it (thousands of ranks blocked in one communicator would otherwise cost N^2).
  std::map<uint64_t, std::vector<std::pair<uint64_t, size_t>>> by_progress;  // (reached, process)
  for (size_t i = 0; i < set.ranks.size(); ++i) {
    if (blocked[i] == nullptr) continue;
    const uint64_t comm = blocked[i]->commId();
    auto [it, added] = by_progress.try_emplace(comm);
    if (!added) continue;
    for (int member : members[comm]) {
      const auto j = process_of.find({comm, member});
      if (j == process_of.end()) continue;
      const auto r = reached.find({j->second, comm});
      it->second.emplace_back(r == reached.end() ? 0 : r->second, j->second);
    }
    std::sort(it->second.begin(), it->second.end());
  }
  std::vector<std::vector<size_t>> waits_for(set.ranks.size());
  for (size_t i = 0; i < set.ranks.size(); ++i) {
    if (blocked[i] == nullptr) continue;
    for (const auto& [progress, j] : by_progress[blocked[i]->commId()]) {
      if (progress >= blocked[i]->op_seq) break;
      if (j != i) waits_for[i].push_back(j);
    }
    std::sort(waits_for[i].begin(), waits_for[i].end());  // a stable search order: by process
  }
  const bool p2p_waits = addP2pWaits(set, process_of, blocked, waits_for);
  // Depth-first search for a cycle; only blocked processes have edges.
  std::vector<int> color(set.ranks.size(), 0);  // 0 new, 1 on the path, 2 done
  std::vector<size_t> path;
  std::vector<size_t> cycle;
  const auto dfs = [&](auto&& self, size_t u) -> bool {
    color[u] = 1;
    path.push_back(u);
    for (size_t w : waits_for[u]) {
      if (color[w] == 1) {
        cycle.assign(std::find(path.begin(), path.end(), w), path.end());
        return true;
      }
      if (color[w] == 0 && self(self, w)) return true;
    }
    path.pop_back();
    color[u] = 2;
    return false;
  };
  for (size_t i = 0; i < set.ranks.size() && cycle.empty(); ++i) {
    if (color[i] == 0) dfs(dfs, i);
  }
  if (cycle.empty()) return std::nullopt;
  // Every rank in the cycle's strongly connected part is in the deadlock, not only the cycle.
  const auto reach = [&](bool forward) {
    std::vector<std::vector<size_t>> edges(set.ranks.size());
    for (size_t u = 0; u < edges.size(); ++u) {
      for (size_t w : waits_for[u]) (forward ? edges[u] : edges[w]).push_back(forward ? w : u);
    }
    std::vector<bool> seen(set.ranks.size(), false);
    std::vector<size_t> todo = {cycle.front()};
    seen[cycle.front()] = true;
    while (!todo.empty()) {
      const size_t u = todo.back();
      todo.pop_back();
      for (size_t w : edges[u]) {
        if (!seen[w]) {
          seen[w] = true;
          todo.push_back(w);
        }
      }
    }
    return seen;
  };
  const std::vector<bool> from = reach(true);
  const std::vector<bool> to = reach(false);
  std::vector<size_t> scc;
  for (size_t i = 0; i < set.ranks.size(); ++i) {
    if (from[i] && to[i]) scc.push_back(i);
  }
  const CycleFacts facts{set, sites, blocked, waits_for, process_of, reached, members};
  if (std::optional<Verdict> deviant = blameDeviant(facts, scc, cycleTable(facts, cycle))) {
    return deviant;
  }
  // A cycle through a send or receive with no deviant is left to the p2p accounting.
  if (p2p_waits && std::any_of(scc.begin(), scc.end(),
                               [&](size_t i) { return format::isP2p(blocked[i]->op); })) {
    return std::nullopt;
  }
  Verdict v;
  v.cls = VerdictClass::kCrossCommDeadlock;
  for (size_t i : scc) v.ranks.push_back(set.ranks[i].global_rank);
  std::sort(v.ranks.begin(), v.ranks.end());
  const RankData& first = set.ranks[cycle.front()];
  const EventRecord& e = *blocked[cycle.front()];
  v.comm_id = e.commId();
  v.seq = e.op_seq;
  v.op = e.op;
  v.site = callSiteOf(first, e, sites);
  v.headline = ranksWord(v.ranks) + " deadlock across communicators: ";
  for (size_t k = 0; k < cycle.size(); ++k) {
    const RankData& r = set.ranks[cycle[k]];
    const RankData& next = set.ranks[cycle[(k + 1) % cycle.size()]];
    const CallSite site = callSiteOf(r, *blocked[cycle[k]], sites);
    v.stacks.push_back(site);
    v.headline += k == 0 ? "rank " + std::to_string(r.global_rank) + " waits in "
                         : std::string(", which waits in ");
    v.headline += opAt(*blocked[cycle[k]], site) + " for rank " + std::to_string(next.global_rank);
  }
  v.tables.push_back(cycleTable(facts, cycle));
  return v;
}

}  // namespace ncclrec::analyzer
