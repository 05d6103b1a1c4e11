#include "analyzer/p2p_blame.h"

#include <algorithm>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "analyzer/headlines.h"
#include "analyzer/phrases.h"
#include "analyzer/rank_ops.h"

namespace ncclrec::analyzer::p2p {

using format::EventRecord;
using format::EventState;
using format::OpType;
using format::RankData;

bool finishedComm(const RankData& r, uint64_t comm) {
  return std::any_of(r.events.begin(), r.events.end(), [&](const EventRecord& e) {
    return e.commId() == comm && (e.op == OpType::kCommDestroy || e.op == OpType::kCommFinalize);
  });
}

bool stoppedIn(const RankData& r, uint64_t comm) {
  for (const EventRecord& e : r.events) {
    if (e.op == OpType::kCommAbort) return false;  // an abort is a verdict of its own
    if (isIncomplete(e)) return false;
  }
  const EventRecord* last = newestCommOp(r);
  if (last != nullptr && lostPeer(*last)) return false;
  return !finishedComm(r, comm);
}

bool aborted(const RankData& r) {
  return std::any_of(r.events.begin(), r.events.end(),
                     [](const EventRecord& e) { return e.op == OpType::kCommAbort; });
}

namespace {

// The collective the rank is blocked in (its newest incomplete one), or nullptr.
const EventRecord* blockedCollective(const RankData& r) {
  const EventRecord* blocked = nullptr;
  for (const EventRecord& e : r.events) {
    if (format::isCollective(e.op) && isIncomplete(e)) blocked = &e;
  }
  return blocked;
}

}  // namespace

bool freeOrWaitsFor(const format::LoadedSet& set, const WaitGraph& g, size_t r, size_t waiter) {
  // Every collective it has pending counts: a group of collectives on several communicators
  // waits for the members of each, and the one the waiter owes may be any of them
  // (P2pBlameTest.PeerBlockedInAGroupWithACollectiveTheWaiterOwesIsTheCulprit).
  bool blocked = false;
  for (const EventRecord& e : set.ranks[r].events) {
    if (!format::isCollective(e.op) || !isIncomplete(e)) continue;
    if (g.owes(waiter, e.commId(), e.op_seq)) return true;
    blocked = true;
  }
  return !blocked;
}

bool heldByChainOn(const format::LoadedSet& set, const WaitGraph& g, size_t r, uint64_t comm,
                   const std::function<bool(int)>& waits_in_p2p) {
  const EventRecord* blocked = blockedCollective(set.ranks[r]);
  if (blocked == nullptr) return false;
  bool any = false;
  for (size_t other = 0; other < set.ranks.size(); ++other) {
    if (other == r || !g.owes(other, blocked->commId(), blocked->op_seq)) continue;
    const std::optional<int> on = g.rankIn(other, comm);
    if (!on || !waits_in_p2p(*on)) return false;
    any = true;
  }
  return any;
}

namespace {

// How many ops the pair from -> to agreed on at most: the longer of its sends and receives.
size_t pairCount(const Posted& posted, uint64_t comm, int from, int to) {
  const auto count = [&](OpType op, int me, int peer) -> size_t {
    const auto it = posted.find({comm, op, me, peer});
    return it == posted.end() ? 0 : it->second.size();
  };
  return std::max(count(OpType::kSend, from, to), count(OpType::kRecv, to, from));
}

// The most any other pair of `comm` moved; nullopt when the pair from -> to is its only one.
std::optional<size_t> otherPairsMoved(const Posted& posted, uint64_t comm, int from, int to) {
  std::optional<size_t> most;
  for (const auto& [key, calls] : posted) {
    const auto& [c, op, me, peer] = key;
    if (c != comm) continue;
    const int a = op == OpType::kSend ? me : peer;
    const int b = op == OpType::kSend ? peer : me;
    if (a == from && b == to) continue;
    most = std::max(most.value_or(0), pairCount(posted, comm, a, b));
  }
  return most;
}

// For a pair with no other pair to compare with, its history: at the first step where the
// sends and receives differ, the side whose count changed from its previous step deviated.
// True: the sender; false: the receiver; nullopt: no earlier step, or both or neither changed.
std::optional<bool> senderChangedFirst(const Posted& posted, uint64_t comm, int from, int to) {
  const auto sends_it = posted.find({comm, OpType::kSend, from, to});
  const auto recvs_it = posted.find({comm, OpType::kRecv, to, from});
  if (sends_it == posted.end() || recvs_it == posted.end() || sends_it->second.empty() ||
      recvs_it->second.empty()) {
    return std::nullopt;
  }
  // The communicators both ranks hold (a pipeline's own one may have no collective).
  const auto commsOf = [](const RankData& r) {
    std::set<uint64_t> out;
    for (const EventRecord& e : r.events) {
      if (format::isCollective(e.op)) out.insert(e.commId());
    }
    return out;
  };
  const std::set<uint64_t> a = commsOf(*sends_it->second.begin()->second.rank);
  const std::set<uint64_t> b = commsOf(*recvs_it->second.begin()->second.rank);
  std::set<uint64_t> shared;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(),
                        std::inserter(shared, shared.end()));
  // Per step (the collectives the rank issued on those communicators before the op: every rank
  // of a communicator issues the same ones, so the steps of two ranks line up), the ops it posted;
  // and what opened each step (the collective's kind, size, type and communicator), so a step is
  // compared with the same part of the loop before it (a loop may run two pipelines).
  using Opening = std::tuple<OpType, uint64_t, int, uint64_t>;
  std::map<size_t, Opening> opened_by;
  const auto perStep = [&](OpType op, int me, int peer) {
    std::map<size_t, size_t> out;
    const auto it = posted.find({comm, op, me, peer});
    size_t step = 0;
    for (const EventRecord& e : it->second.begin()->second.rank->events) {
      if (format::isCollective(e.op) && shared.contains(e.commId())) {
        opened_by.try_emplace(++step, Opening{e.op, e.count, e.dtype, e.commId()});
      }
      if (e.commId() != comm) continue;
      if (e.op == op && e.rank() == me && e.peer() == peer && it->second.contains(e.op_seq)) {
        ++out[step];
      }
    }
    return out;
  };
  std::map<size_t, size_t> sends = perStep(OpType::kSend, from, to);
  std::map<size_t, size_t> recvs = perStep(OpType::kRecv, to, from);
  std::set<size_t> steps;
  for (const auto& [step, n] : sends) steps.insert(step);
  for (const auto& [step, n] : recvs) steps.insert(step);
  std::optional<size_t> prev;
  for (size_t step : steps) {
    if (sends[step] != recvs[step]) {
      if (!prev) return std::nullopt;
      // The latest earlier step the same collective opened, else the step just before.
      const auto opening = opened_by.find(step);
      for (auto s = steps.begin(); opening != opened_by.end() && *s < step; ++s) {
        const auto o = opened_by.find(*s);
        if (o != opened_by.end() && o->second == opening->second) prev = *s;
      }
      const bool send_changed = sends[step] != sends[*prev];
      const bool recv_changed = recvs[step] != recvs[*prev];
      if (send_changed == recv_changed) return std::nullopt;
      return send_changed;
    }
    prev = step;
  }
  return std::nullopt;
}

}  // namespace

std::optional<Located> pairedBefore(const std::map<uint64_t, Located>& calls,
                                    const std::map<uint64_t, Located>& counterparts,
                                    uint64_t before, const std::string& site,
                                    const CallSites& sites) {
  for (const auto& [seq, call] : calls) {
    if (seq >= before) break;
    const auto match = counterparts.find(seq);
    if (match != counterparts.end() &&
        describeCallSite(callSiteOf(*match->second.rank, *match->second.event, sites)) == site) {
      return call;
    }
  }
  return std::nullopt;
}

Standing standing(const RankData& r, const EventRecord& blocked,
                  const std::function<bool(const EventRecord&)>& owed, const CallSites& sites,
                  bool one_stretch_will_do) {
  const SameSite site(describeCallSite(callSiteOf(r, blocked, sites)), sites);
  const auto likeBlocked = [&](const EventRecord& e) {
    return e.commId() == blocked.commId() && e.op == blocked.op && e.peer() == blocked.peer() &&
           site(r, e);
  };
  std::vector<size_t> stretches;  // owed ops between two earlier calls like the blocked one
  size_t now = 0;                 // owed ops since the last of them
  bool began = false;
  for (const EventRecord& e : r.events) {
    if (e.index >= blocked.index) break;
    if (owed(e)) ++now;
    if (!likeBlocked(e)) continue;
    if (began) stretches.push_back(now);
    began = true;
    now = 0;
  }
  const size_t m = stretches.size();
  if (m == 0) return Standing::kUnknown;
  // The shortest period the stretches repeat with (m itself when none repeats).
  size_t period = 1;
  const auto repeats = [&](size_t q) {
    for (size_t t = q; t < m; ++t) {
      if (stretches[t] != stretches[t - q]) return false;
    }
    return true;
  };
  while (period < m && !repeats(period)) ++period;
  const bool seen_repeat = period < m;
  const size_t expected = stretches[m - period];
  // One stretch is its own history; two or more that never repeat are no loop to go by.
  if (now == expected && (seen_repeat || m == 1)) return Standing::kBehind;
  if (now < expected && (seen_repeat || (m == 1 && one_stretch_will_do))) return Standing::kPast;
  return Standing::kUnknown;
}

std::optional<ShortRun> shortRunOf(const Posted& posted, const Located& a, const Located& b,
                                   const CallSites& sites) {
  const auto siteOf = [&](const Located& x) {
    return describeCallSite(callSiteOf(*x.rank, *x.event, sites));
  };
  const auto listOf = [&](const Located& x) {
    const EventRecord& e = *x.event;
    return posted.find({e.commId(), e.op, e.rank(), e.peer()});
  };
  // Whether `x` (paired with `y`) closed short its run of calls from the site that paired with
  // `y`'s site before; that site.
  const auto closedShort = [&](const Located& x, const Located& y) -> std::optional<CallSite> {
    const auto mine = listOf(x), theirs = listOf(y);
    if (mine == posted.end() || theirs == posted.end()) return std::nullopt;
    const std::optional<Located> role =
        pairedBefore(mine->second, theirs->second, x.event->op_seq, siteOf(y), sites);
    if (!role) return std::nullopt;
    const std::string role_site = siteOf(*role);
    if (role_site == siteOf(x)) return std::nullopt;  // the pairing it always made
    const EventRecord& e = *x.event;
    const SameSite from_role(role_site, sites);
    const Standing s = standing(
        *x.rank, e,
        [&](const EventRecord& o) {
          return o.commId() == e.commId() && o.op == e.op && o.rank() == e.rank() &&
                 o.peer() == e.peer() && !rejected(o) && from_role(*x.rank, o);
        },
        sites, true);  // with the pairing of two sites that never paired before
    if (s != Standing::kPast) return std::nullopt;
    return callSiteOf(*role->rank, *role->event, sites);
  };
  const std::optional<CallSite> a_short = closedShort(a, b);
  const std::optional<CallSite> b_short = closedShort(b, a);
  if (a_short.has_value() == b_short.has_value()) return std::nullopt;
  return a_short ? ShortRun{a, *a_short} : ShortRun{b, *b_short};
}

std::optional<CallSite> roleSite(const std::map<uint64_t, Located>& theirs,
                                 const std::map<uint64_t, Located>& mine, uint64_t before,
                                 const CallSite& waiter_site, const CallSite& last,
                                 const CallSites& sites) {
  // The first such pair: later ones may be shifted by the missing call.
  const std::optional<Located> paired =
      pairedBefore(theirs, mine, before, describeCallSite(waiter_site), sites);
  if (!paired) return std::nullopt;
  const CallSite role = callSiteOf(*paired->rank, *paired->event, sites);
  if (describeCallSite(role) == describeCallSite(last)) return std::nullopt;
  return role;
}

bool shortSideDeviates(const Posted& posted, uint64_t comm, int from, int to) {
  const auto count = [&](OpType op, int me, int peer) -> size_t {
    const auto it = posted.find({comm, op, me, peer});
    return it == posted.end() ? 0 : it->second.size();
  };
  const size_t sent = count(OpType::kSend, from, to);
  const size_t received = count(OpType::kRecv, to, from);
  const std::optional<size_t> others = otherPairsMoved(posted, comm, from, to);
  if (others && std::min(sent, received) < *others) return true;
  // Not below the other pairs (or none): they may play another role (a ring's and a pipeline's
  // links on one communicator); the pair's own history tells when it can.
  const std::optional<bool> sender = senderChangedFirst(posted, comm, from, to);
  return sender.has_value() && *sender == (sent < received);
}

Verdict missingCounterpart(const Posted& posted, const WaitGraph& g, const Located& w,
                           const CallSites& sites) {
  const EventRecord& e = *w.event;
  const OpType other = counterpartOf(e.op);
  const int culprit = g.globalRankOf(e.commId(), e.peer());
  const auto theirs = posted.find({e.commId(), other, e.peer(), e.rank()});
  const auto mine = posted.find({e.commId(), e.op, e.rank(), e.peer()});
  const size_t n = theirs == posted.end() ? 0 : theirs->second.size();
  const size_t k = mine == posted.end() ? 0 : mine->second.size();
  Verdict v;
  v.cls = VerdictClass::kP2pMismatch;
  v.ranks = {culprit};
  v.comm_id = e.commId();
  v.seq = n + 1;  // the first one it never posted
  v.op = other;
  const CallSite waiter_site = callSiteOf(*w.rank, e, sites);
  P2pShortfall shortfall;
  shortfall.waiter = w.rank->global_rank;
  shortfall.posted.n = n;
  shortfall.waited = k;
  if (n > 0) {
    const Located& l = theirs->second.rbegin()->second;
    v.site = callSiteOf(*l.rank, *l.event, sites);
    shortfall.posted.last_seq = l.event->op_seq;
    shortfall.posted.last_site = v.site;
    // The function that should have posted it: the one whose calls paired with the waiting
    // rank's calls from the same site in the earlier steps.
    if (const std::optional<CallSite> role =
            roleSite(theirs->second, mine->second, e.op_seq, waiter_site, v.site, sites)) {
      v.site = *role;
      shortfall.by_role = true;
      shortfall.paired_with = waiter_site;
    }
  }
  v.stacks = {v.site, waiter_site};
  if (!v.site.known()) v.stacks.erase(v.stacks.begin());
  const int from = e.op == OpType::kRecv ? e.peer() : e.rank();
  const int dest = e.op == OpType::kRecv ? e.rank() : e.peer();
  shortfall.others_moved = otherPairsMoved(posted, e.commId(), from, dest);
  v.headline = p2pShortfallHeadline(v, shortfall);
  return v;
}

}  // namespace ncclrec::analyzer::p2p
