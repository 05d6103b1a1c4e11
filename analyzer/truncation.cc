// Classifying a stream that stopped while others wait: exited, crashed, blocked elsewhere, or
// stuck in host code.
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/engine.h"
#include "analyzer/headlines.h"
#include "analyzer/headlines_blocked.h"

namespace ncclrec::analyzer::engine {

bool Engine::exitedOnALostPeer(const RankData& rd, Verdict& v, const Inferred& inferred) const {
  std::vector<size_t> followed;
  return exitedOnALostPeer(static_cast<size_t>(&rd - set_.ranks.data()), v, inferred, followed);
}

bool Engine::exitedOnALostPeer(size_t rank, Verdict& v, const Inferred& inferred,
                               std::vector<size_t>& followed) const {
  const RankData& rd = set_.ranks[rank];
  followed.push_back(rank);
  // Its newest calls, back to the last one that completed: the failures it exited on.
  for (auto it = rd.events.rbegin(); it != rd.events.rend(); ++it) {
    if (!isCommOp(*it)) continue;
    if (!lostPeer(*it)) break;
    Verdict cause;
    if (leaverExplains(*it, cause, inferred, followed)) {
      v = std::move(cause);
      return true;
    }
  }
  return false;
}

// A stream that stopped before slot `p` of `c`, and what the verdict says of it and of the ranks
// that wait there.
struct Engine::Truncation {
  const CommStreams& c;
  size_t p;
  const std::vector<size_t>& going;  // the streams that wait in slot p
  std::vector<size_t> culprits;      // the streams named: stopped first, all in the same way
  StopKind kind;
  const Stream& stopped;  // the first of them, standing for the others
  const RankData& rd;     // its recording
  const Op& waited;       // the op the others wait in
  CallSite waited_site;
  std::vector<int> others;  // the waiting ranks
  std::string who;          // "rank 3", "ranks 3,5"
  uint64_t same = 0;        // how many ops like `waited` the stopped rank issued
  Inferred& inferred;       // the ranks found dead so far; the culprits join them when they died
  // The others, in the op they wait in.
  Waiters waiters() const { return {others, waited.e->op, waited.e->op_seq, false}; }
};

Engine::StopKind Engine::stopKind(const CommStreams& c, size_t s, bool peers_lost_it,
                                  const Inferred& inferred) const {
  // How its process stands (the wait-for graph's liveness), then what the verdict inferred.
  const size_t x = c.streams[s].rank;
  switch (waits().liveness(x)) {
    case Liveness::kExited:
      return StopKind::kExited;
    case Liveness::kCrashed:
    case Liveness::kSilent:
      return StopKind::kDied;
    case Liveness::kNotRunning:
      return StopKind::kNotRunning;
    case Liveness::kRunning:
      break;
  }
  return dead(x, inferred) || peers_lost_it ? StopKind::kDied : StopKind::kAlive;
}

std::vector<size_t> Engine::stoppedAlike(const CommStreams& c, size_t p,
                                         const std::vector<size_t>& ended,
                                         const std::vector<size_t>& going, StopKind* kind,
                                         const Inferred& inferred) const {
  // Others failed at the op this rank never issued: the transport lost it, so it is gone. One is
  // enough: the others may still be waiting to notice (a run analyzed 0.2 s after the kill had
  // rank 0 pending and ranks 1-2 failed).
  // Unless one of the ranks that stopped crashed or went silent by its own facts: that one is
  // what they lost, and a rank whose recording shows it alive is not gone (faultgen seed 10066:
  // a rank killed, another blocked elsewhere that dumped and was stopped by the launcher later).
  const bool gone_by_itself = std::any_of(ended.begin(), ended.end(), [&](size_t s) {
    const Liveness l = waits().liveness(c.streams[s].rank);
    return l == Liveness::kCrashed || l == Liveness::kSilent;
  });
  const bool peers_lost_it =
      !gone_by_itself && std::any_of(going.begin(), going.end(),
                                     [&](size_t g) { return lostPeer(*c.streams[g].ops[p].e); });
  // The first stopped rank stands for them all; ranks that stopped the same way are named
  // together: exited first, then died, then not running, then alive.
  std::vector<size_t> order = ended;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return stopKind(c, a, peers_lost_it, inferred) < stopKind(c, b, peers_lost_it, inferred);
  });
  *kind = stopKind(c, order.front(), peers_lost_it, inferred);
  std::vector<size_t> culprits;
  for (size_t s : order) {
    if (stopKind(c, s, peers_lost_it, inferred) == *kind) culprits.push_back(s);
  }
  return *kind == StopKind::kAlive && culprits.size() > 1
             ? ownStops(c, std::move(culprits), inferred)
             : culprits;
}

std::vector<size_t> Engine::ownStops(const CommStreams& c, std::vector<size_t> alive,
                                     const Inferred& inferred) const {
  // Of several ranks alive and gone from `c`, one blocked in another communicator for one of the
  // others (directly, through a chain of waits, or in a send or receive with it) merely waits: a
  // waiter is never named beside the rank it waits for. When every one of them waits, through its
  // chain, for one and the same rank elsewhere, that rank ends them all: one of them stands for the
  // others.
  std::vector<size_t> own;
  std::set<std::optional<size_t>> ends;
  for (size_t s : alive) {
    const size_t rank = c.streams[s].rank;
    const EventRecord* at = newestPendingCommOp(set_.ranks[rank]);
    std::vector<ChainStep> links;
    const std::optional<size_t> end = at != nullptr && at->commId() != c.comm_id
                                          ? chainEnd(rank, at, links, inferred)
                                          : std::nullopt;
    ends.insert(end);
    // A send or receive pairs by peer, not by a slot a chain could follow: its peer.
    const std::optional<size_t> peer =
        at != nullptr && at->commId() != c.comm_id && format::isP2p(at->op) ? peerProcess(*at)
                                                                            : std::nullopt;
    const bool waits_for_another = std::any_of(alive.begin(), alive.end(), [&](size_t o) {
      return o != s && (c.streams[o].rank == end || c.streams[o].rank == peer);
    });
    if (!waits_for_another) own.push_back(s);
  }
  if (ends.size() == 1 && *ends.begin() && own.size() == alive.size()) own.resize(1);
  return own.empty() ? alive : own;
}

void Engine::classifyTruncation(const CommStreams& c, size_t p, const std::vector<size_t>& ended,
                                const std::vector<size_t>& going, Verdict& v,
                                Inferred& inferred) const {
  StopKind kind = StopKind::kAlive;
  std::vector<size_t> culprits = stoppedAlike(c, p, ended, going, &kind, inferred);
  const Stream& stopped = c.streams[culprits.front()];
  const Op& waited = c.streams[going.front()].ops[p];
  Truncation t{c,
               p,
               going,
               std::move(culprits),
               kind,
               stopped,
               set_.ranks[stopped.rank],
               waited,
               siteAt(set_.ranks[c.streams[going.front()].rank], *waited.e),
               {},
               {},
               0,
               inferred};
  const bool stale = dead(stopped.rank, inferred);  // before the ranks below join the dead
  if (kind == StopKind::kDied) {
    for (size_t s : t.culprits) inferred.dead.insert(c.streams[s].rank);
  }
  v.ranks = ranksOf(c, t.culprits);
  v.comm_id = c.comm_id;
  v.seq = waited.e->op_seq;
  v.op = waited.e->op;
  t.others = ranksOf(c, going);
  t.who = ranksWord(v.ranks);
  // "after 99 all-reduces from train_step()": the collectives like the one the others wait in.
  for (const Op& o : stopped.ops) t.same += opSite(o) == opSite(waited) ? 1 : 0;
  Stop stop;
  stop.same = t.same;
  stop.waited_site = t.waited_site;
  stop.others = t.others;
  stop.others_failed = waited.e->state == EventState::kFailed;
  stop.result = waited.e->result;
  if (!stopped.ops.empty()) v.site = siteAt(t.rd, *stopped.ops.back().e);
  if (failedOnItsOwnCall(t, v)) return;
  if (kind == StopKind::kExited) {
    if (exitedOnALostPeer(t.rd, v, inferred)) return;
    v.cls = VerdictClass::kRankExited;
    stop.how = Stop::How::kExited;
    v.headline = stopHeadline(v, stop);
    return;
  }
  if (kind == StopKind::kDied) {
    v.cls = VerdictClass::kRankCrashed;
    stop.how = t.rd.fatal_signal != 0 ? Stop::How::kCrashed
               : stale                ? Stop::How::kDiedSilent
                                      : Stop::How::kDiedUnseen;
    stop.signal = t.rd.fatal_signal;
    if (stale) stop.silent_ns = now_ - lastSignOfLife(stopped.rank);
    v.headline = stopHeadline(v, stop);
    return;
  }
  if (kind == StopKind::kNotRunning) {
    // Between two ops: the launcher saw its process there but not running (stopped, in
    // uninterruptible sleep), not in host code of its own.
    v.cls = VerdictClass::kRankNotRunning;
    stop.how = Stop::How::kNotRunning;
    stop.why = whyNotRunning(t.stopped.rank);
    v.headline = stopHeadline(v, stop);
    return;
  }
  classifyAlive(t, v);
}

bool Engine::failedOnItsOwnCall(const Truncation& t, Verdict& v) const {
  // Its last NCCL call failed with an error of its own (bad input, internal error): that is why
  // it stopped, whatever it did next (exited on the error, crashed, or is handling it). Refused
  // calls are left out of the streams, so the stream ends just before it.
  const EventRecord* last_call = newestPeerCall(t.rd);
  if (last_call == nullptr || last_call->state != EventState::kFailed ||
      last_call->result == kNcclRemoteError || last_call->result == kNcclSystemError) {
    return false;
  }
  OwnError e;
  e.comm_id = last_call->commId();
  e.result = last_call->result;
  e.then = t.kind == StopKind::kExited       ? OwnError::Then::kExited
           : t.kind == StopKind::kDied       ? OwnError::Then::kDied
           : t.kind == StopKind::kNotRunning ? OwnError::Then::kNotRunning
                                             : OwnError::Then::kNothingSince;
  Waiters w = t.waiters();
  w.failed = std::all_of(t.going.begin(), t.going.end(), [&](size_t g) {
    return t.c.streams[g].ops[t.p].e->state == EventState::kFailed;
  });
  v.cls = VerdictClass::kNcclError;
  v.op = last_call->op;
  v.site = siteAt(t.rd, *last_call);
  v.headline = ownErrorHeadline(v, e, w);
  return true;
}

void Engine::stillInsideTheirOp(const Truncation& t, const EventRecord& pending, Verdict& v) const {
  // A ring's ranks that got all their data of an op finish it and go on to the next one while
  // the ranks whose data was lost still wait in it: nobody left the program's order, and a rank
  // inside an NCCL call is not in host code. Without transport counters (transport_stalled)
  // nothing tells the link from the device.
  const std::vector<int> inside = ranksOf(t.c, t.culprits);
  v.cls = VerdictClass::kUndecided;
  v.ranks.clear();
  v.seq = pending.op_seq;
  v.op = pending.op;
  v.site = siteAt(t.rd, pending);
  v.headline = stillInsideHeadline(v, inside, t.waiters());
  v.missing.push_back(stillInsideMissing(v, inside));
}

void Engine::classifyAlive(const Truncation& t, Verdict& v) const {
  // Alive: either waiting in an op of another communicator, or in host code.
  const EventRecord* pending = newestPendingCommOp(t.rd);
  const EventRecord* last = newestCommOp(t.rd);
  if (pending != nullptr && pending->commId() != t.c.comm_id) {
    const OuterWait outer{t.others,
                          ranksOf(t.c, t.culprits),
                          {evidenceOpOf(*t.waited.e, t.waited_site), t.c.comm_id}};
    if (t.culprits.size() == 1 && blameChainEnd(t.stopped.rank, *pending, outer, v, t.inferred))
      return;
    if (t.culprits.size() > 1 && oneEndBehindAll(t.c, t.culprits, outer, v, t.inferred)) return;
    v.cls = VerdictClass::kRankBlockedElsewhere;
    v.site = siteAt(t.rd, *pending);
    v.headline =
        blockedElsewhereHeadline(v, {evidenceOpOf(*pending, v.site), pending->commId()},
                                 t.waiters(), waitsThereFor(*pending, t.stopped.rank, t.inferred));
    return;
  }
  if (pending != nullptr && format::isCollective(pending->op)) {
    stillInsideTheirOp(t, *pending, v);
    return;
  }
  v.cls = VerdictClass::kRankStuckInHost;
  if (last != nullptr) v.site = siteAt(t.rd, *last);
  v.headline = stuckInHostHeadline(v, lastOp(t.rd, last), t.waiters());
}

bool Engine::followChain(size_t i, std::vector<ChainNode>& nodes, std::set<size_t>& seen,
                         std::vector<std::pair<size_t, size_t>>& stopped,
                         const Inferred& inferred) const {
  constexpr size_t kMaxNodes = 64;
  const ChainNode node = nodes[i];
  // The chain follows collective slots only: a send or receive pairs by peer, not by seq.
  if (!format::isCollective(node.op->op)) return false;
  const uint64_t comm = node.op->commId();
  const auto there = std::find_if(comms_.begin(), comms_.end(),
                                  [&](const CommStreams& c) { return c.comm_id == comm; });
  if (there == comms_.end()) return false;
  const auto mine = std::find_if(there->streams.begin(), there->streams.end(),
                                 [&](const Stream& st) { return st.rank == node.rank; });
  if (mine == there->streams.end()) return false;
  const WaitGraph& g = waits();
  const std::vector<size_t> behind = g.behind(comm, node.op->op_seq, node.rank);
  // Every peer issued it: in a group, the rank waits for its other ops; alone, no one holds it.
  if (behind.empty()) return node.in_group;
  const auto pos =
      std::find_if(mine->ops.begin(), mine->ops.end(), [&](const Op& o) { return o.e == node.op; });
  if (pos == mine->ops.end()) return false;
  for (const size_t x : behind) {
    // The op waited in repeats one from the same call site that this rank answered before; a
    // new call site would make the waiting rank the one that deviated (a gated collective).
    const uint64_t answered = g.reached(x, comm);
    if (std::none_of(mine->ops.begin(), pos, [&](const Op& o) {
          return opSite(o) == opSite(*pos) && o.e->op_seq <= answered;
        })) {
      return false;
    }
    const std::vector<const EventRecord*>& its_ops = g.waitsIn(x);
    if (g.gone(x) || inferred.dead.contains(x) || its_ops.empty()) {
      if (std::none_of(stopped.begin(), stopped.end(),
                       [&](const auto& e) { return e.first == x; })) {
        stopped.emplace_back(x, i);
      }
      continue;
    }
    if (std::any_of(its_ops.begin(), its_ops.end(),
                    [&](const EventRecord* o) { return o->commId() == comm; })) {
      return false;
    }
    if (!seen.insert(x).second) {
      // Reached twice: a cycle when it leads back to a rank on the way here.
      for (size_t j = i; j != SIZE_MAX; j = nodes[j].parent) {
        if (nodes[j].rank == x) return false;
      }
      continue;
    }
    if (nodes.size() + its_ops.size() > kMaxNodes) return false;
    for (const EventRecord* o : its_ops) nodes.push_back({x, o, i, its_ops.size() > 1});
  }
  return true;
}

std::optional<size_t> Engine::chainEnd(size_t self, const EventRecord*& at,
                                       std::vector<ChainStep>& links,
                                       const Inferred& inferred) const {
  // The blocked ranks reached from `self`, breadth first (followChain); from each op of its
  // unfinished group when `at` is one of them.
  std::vector<const EventRecord*> start = waits().waitsIn(self);
  if (std::find(start.begin(), start.end(), at) == start.end()) start = {at};
  std::vector<ChainNode> nodes;
  for (const EventRecord* o : start) nodes.push_back({self, o, SIZE_MAX, start.size() > 1});
  std::set<size_t> seen = {self};
  std::vector<std::pair<size_t, size_t>> stopped;  // (rank, the node whose op waits for it)
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!followChain(i, nodes, seen, stopped, inferred)) return std::nullopt;
  }
  // Two ranks stopped: the end is the one that left on its own when every other one only reacted
  // (its newest call failed because a peer left: a rank that fails a group with a killed rank
  // and exits is that rank's victim); else there is no one end.
  if (stopped.size() > 1) {
    std::erase_if(stopped, [&](const auto& e) { return reacted(e.first); });
  }
  if (stopped.size() != 1) return std::nullopt;
  const size_t end = stopped.front().first;
  const size_t end_parent = stopped.front().second;
  // The links from `self` to the rank at the end, outermost first.
  std::vector<size_t> path;
  for (size_t j = end_parent; j != SIZE_MAX; j = nodes[j].parent) path.push_back(j);
  for (auto it = path.rbegin(); it != path.rend(); ++it) {
    const ChainNode& n = nodes[*it];
    const size_t waits_for = std::next(it) == path.rend() ? end : nodes[*std::next(it)].rank;
    links.push_back({set_.ranks[n.rank].global_rank,
                     {evidenceOpOf(*n.op, siteAt(set_.ranks[n.rank], *n.op)), n.op->commId()},
                     waits_for,
                     set_.ranks[waits_for].global_rank});
  }
  at = nodes[end_parent].op;
  return end;
}

bool Engine::blameChainEnd(size_t self, const EventRecord& pending, const OuterWait& outer,
                           Verdict& v, Inferred& inferred) const {
  std::vector<ChainStep> links;  // outermost first
  const EventRecord* at = &pending;
  const std::optional<size_t> end = chainEnd(self, at, links, inferred);
  if (!end) return false;
  const size_t x = *end;
  const RankData& rx = set_.ranks[x];
  // From the culprit outward: "rank 1 waits for it in ...; ranks 0,2 wait for rank 1 in ...".
  const auto chain = [&](size_t culprit) {
    return chainPhrase(links, culprit, outer.waiters, outer.waited, outer.in);
  };
  // The rank at the end stopped only because a peer it lost left first: that one is the verdict
  // (a rank that failed a group with a rank that returned from main, and exited, is its victim).
  if (Verdict cause; reacted(x) && exitedOnALostPeer(rx, cause, inferred)) {
    v = std::move(cause);
    v.headline += chain(SIZE_MAX);
    return true;
  }
  const EventRecord* last = newestCommOp(rx);
  ChainEnd stand;
  const Liveness how = waits().liveness(x);  // how its process stands, then what was inferred
  if (how == Liveness::kExited) {
    v.cls = VerdictClass::kRankExited;
    stand.how = ChainEnd::How::kExited;
  } else if (how == Liveness::kNotRunning) {
    v.cls = VerdictClass::kRankNotRunning;
    stand.how = ChainEnd::How::kNotRunning;
    stand.why = whyNotRunning(x);
  } else if (how != Liveness::kRunning || dead(x, inferred)) {
    v.cls = VerdictClass::kRankCrashed;
    inferred.dead.insert(x);
    stand.how = rx.fatal_signal != 0 ? ChainEnd::How::kCrashed : ChainEnd::How::kDied;
    stand.signal = rx.fatal_signal;
  } else {
    v.cls = VerdictClass::kRankStuckInHost;
    stand.how = ChainEnd::How::kInHost;
  }
  v.ranks = {rx.global_rank};
  v.comm_id = at->commId();
  v.seq = at->op_seq;
  v.op = at->op;
  v.site = last != nullptr ? siteAt(rx, *last) : CallSite{};
  stand.last = lastOp(rx, last);
  v.headline = chainEndHeadline(v, stand, chain(x));
  return true;
}

bool Engine::oneEndBehindAll(const CommStreams& c, const std::vector<size_t>& culprits,
                             const OuterWait& outer, Verdict& v, Inferred& inferred) const {
  std::optional<Verdict> first;
  Inferred tried = inferred;  // kept only when every chain agrees
  for (const size_t s : culprits) {
    const size_t rank = c.streams[s].rank;
    const EventRecord* pending = newestPendingCommOp(set_.ranks[rank]);
    if (pending == nullptr || pending->commId() == c.comm_id) return false;
    Verdict each;
    if (!blameChainEnd(rank, *pending, outer, each, tried)) return false;
    if (first && (each.cls != first->cls || each.ranks != first->ranks)) return false;
    if (!first) first = std::move(each);
  }
  if (!first) return false;
  v = std::move(*first);
  inferred = std::move(tried);
  return true;
}

LastOp Engine::lastOp(const RankData& rd, const EventRecord* last) const {
  LastOp o;
  if (last == nullptr) return o;
  o.any = true;
  o.op = evidenceOpOf(*last, siteAt(rd, *last));
  o.completed = last->endNs() > 0;
  if (o.completed) o.ago_ns = now_ - last->endNs();
  return o;
}

ThereWaitsFor Engine::waitsThereFor(const EventRecord& pending, size_t self,
                                    const Inferred& inferred) const {
  ThereWaitsFor there;
  if (!format::isCollective(pending.op)) return there;  // p2p pairs by peer, not by seq
  const WaitGraph& g = waits();
  const std::vector<size_t> behind = g.behind(pending.commId(), pending.op_seq, self);
  if (behind.empty()) return there;
  there.how = ThereWaitsFor::How::kSeveral;
  for (const size_t x : behind) there.ranks.push_back(globalRank(x));
  std::sort(there.ranks.begin(), there.ranks.end());
  if (behind.size() != 1) return there;
  const size_t rank = behind.front();
  const RankData& rd = set_.ranks[rank];
  const EventRecord* its_pending = g.waitsIn(rank).empty() ? nullptr : g.waitsIn(rank).back();
  if (g.liveness(rank) == Liveness::kExited) {
    there.how = ThereWaitsFor::How::kExited;
  } else if (g.liveness(rank) == Liveness::kCrashed) {
    there.how = ThereWaitsFor::How::kCrashed;
    there.signal = rd.fatal_signal;
  } else if (g.gone(rank) || inferred.dead.contains(rank)) {
    there.how = ThereWaitsFor::How::kDied;
  } else if (its_pending != nullptr && its_pending->commId() != pending.commId()) {
    there.how = ThereWaitsFor::How::kBlocked;
    there.blocked_in = {evidenceOpOf(*its_pending, {}), its_pending->commId()};
  } else {
    there.how = ThereWaitsFor::How::kInHost;
    there.last = lastOp(rd, newestCommOp(rd));
  }
  return there;
}

}  // namespace ncclrec::analyzer::engine
