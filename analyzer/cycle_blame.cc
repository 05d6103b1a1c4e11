#include "analyzer/cycle_blame.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/headlines.h"
#include "analyzer/rank_ops.h"

namespace ncclrec::analyzer {
namespace {

using format::EventRecord;
using format::RankData;

// The smallest number of other members of a communicator that must agree on an op before the one
// member that did not issue it counts as the deviant: with one other member, two ranks that order
// two communicators differently cannot tell which of them is "the" deviant.
constexpr size_t kMinAgreeingPeers = 2;

// The most members of a cycle for which the own-history and new-op tests run.
constexpr size_t kMaxMembersForOwnTests = 64;

// A member of the cycle that did not issue an op its communicator's other members all issued.
struct Deviation {
  size_t rank = 0;                      // index into set.ranks
  const EventRecord* theirs = nullptr;  // the op the others issued (one of their blocked ones)
  size_t their_rank = 0;                // the rank of `theirs`
  std::vector<int> peers;               // the global ranks that issued it
};

std::optional<Deviation> deviationOf(const CycleFacts& f, size_t i,
                                     const std::vector<size_t>& scc) {
  for (size_t j : scc) {
    const EventRecord* theirs = f.g.blocked(j);
    if (j == i || theirs == nullptr || !format::isCollective(theirs->op)) continue;
    if (std::find(f.g.waitsFor(j).begin(), f.g.waitsFor(j).end(), i) == f.g.waitsFor(j).end())
      continue;
    std::vector<int> ahead;
    bool alone_behind = true;
    for (int m : f.g.members(theirs->commId())) {
      const std::optional<size_t> p = f.g.processOf(theirs->commId(), m);
      if (!p || *p == i) continue;  // no data, or itself
      if (!f.g.issued(*p, theirs->commId(), theirs->op_seq)) {
        alone_behind = false;
        break;
      }
      ahead.push_back(f.set.ranks[*p].global_rank);
    }
    if (!alone_behind || ahead.size() < kMinAgreeingPeers) continue;
    std::sort(ahead.begin(), ahead.end());
    return Deviation{i, theirs, j, std::move(ahead)};
  }
  return std::nullopt;
}

// Whether `e`'s collective (op and call site) was issued on its communicator before `e`'s seq by
// any rank: a known step of the program, not an inserted one.
bool knownBefore(const CycleFacts& f, const RankData& owner, const EventRecord& e) {
  const std::string site = describeCallSite(callSiteOf(owner, e, f.sites));
  if (format::isP2p(e.op)) {  // per-peer seqs: its own earlier calls tell
    return std::any_of(owner.events.begin(), owner.events.end(), [&](const EventRecord& x) {
      return x.index < e.index && x.commId() == e.commId() && x.op == e.op &&
             describeCallSite(callSiteOf(owner, x, f.sites)) == site;
    });
  }
  for (const RankData& r : f.set.ranks) {
    for (const EventRecord& x : r.events) {
      if (x.commId() != e.commId() || x.op != e.op || x.op_seq >= e.op_seq ||
          !format::isCollective(x.op)) {
        continue;
      }
      if (describeCallSite(callSiteOf(r, x, f.sites)) == site) return true;
    }
  }
  return false;
}

// What repeats across a program's steps: an op of a communicator from one call site. Asked of
// one rank's events only (SameSite).
struct StepKey {
  uint64_t comm_id = 0;
  format::OpType op = format::OpType::kUnknown;
  SameSite site;
  bool matches(const RankData& r, const EventRecord& e) const {
    return e.commId() == comm_id && e.op == op && site(r, e);
  }
};

StepKey keyOf(const CycleFacts& f, const RankData& r, const EventRecord& e) {
  return {e.commId(), e.op, SameSite(describeCallSite(callSiteOf(r, e, f.sites)), f.sites)};
}

// What one rank's own history says of op `missed` before op `mine`: each earlier stretch between
// two `mine`-like ops held a `missed`-like op or not; the current stretch, from the last earlier
// `mine`-like op to `mine` itself, holds one or not. What came before the first `mine`-like op
// is no stretch: one step of history does not tell a skip from two ranks ordering two
// communicators differently (samples/cross_comm_deadlock).
struct OwnHistory {
  int held = 0;        // earlier stretches that held it
  int lacked = 0;      // earlier stretches that did not
  bool now = false;    // the current stretch holds it
  bool began = false;  // there is a current stretch (an earlier `mine`-like op)
};

OwnHistory ownHistory(const CycleFacts& f, const RankData& r, const EventRecord& mine,
                      const StepKey& mine_key, const StepKey& missed_key) {
  OwnHistory h;
  bool held = false;
  for (const EventRecord& e : r.events) {
    if (e.index >= mine.index) break;
    if (missed_key.matches(r, e)) held = true;
    if (!mine_key.matches(r, e)) continue;
    if (h.began) ++(held ? h.held : h.lacked);
    h.began = true;
    held = false;
  }
  h.now = held;
  return h;
}

// The member of the cycle that left out, this time only, an op its own history always issued
// before the op it is blocked in — the op the member it waits for is blocked in (a skipped
// collective seen through a communicator of two, where no third rank can agree).
std::optional<Deviation> deviationFromOwnHistory(const CycleFacts& f, size_t i,
                                                 const std::vector<size_t>& scc) {
  const EventRecord* mine = f.g.blocked(i);
  if (mine == nullptr) return std::nullopt;
  const RankData& me = f.set.ranks[i];
  const StepKey mine_key = keyOf(f, me, *mine);
  for (size_t j : f.g.waitsFor(i)) {
    const EventRecord* theirs = f.g.blocked(j);
    if (theirs == nullptr || theirs->commId() == mine->commId() ||
        std::find(scc.begin(), scc.end(), j) == scc.end()) {
      continue;
    }
    const OwnHistory h = ownHistory(f, me, *mine, mine_key, keyOf(f, f.set.ranks[j], *theirs));
    if (h.began && !h.now && h.held > 0 && h.lacked == 0) {
      return Deviation{i, theirs, j, {f.set.ranks[j].global_rank}};
    }
  }
  return std::nullopt;
}

// The member blocked in an op new to its communicator (no rank issued it there before) while
// every other member waits in a known step of the program: it inserted that op.
std::optional<Deviation> deviationByNewOp(const CycleFacts& f, size_t i,
                                          const std::vector<size_t>& scc) {
  const EventRecord* mine = f.g.blocked(i);
  if (mine == nullptr || knownBefore(f, f.set.ranks[i], *mine)) return std::nullopt;
  for (size_t k : scc) {
    if (k != i && (f.g.blocked(k) == nullptr || !knownBefore(f, f.set.ranks[k], *f.g.blocked(k)))) {
      return std::nullopt;
    }
  }
  for (size_t j : f.g.waitsFor(i)) {
    if (f.g.blocked(j) != nullptr && std::find(scc.begin(), scc.end(), j) != scc.end()) {
      return Deviation{i, f.g.blocked(j), j, {f.set.ranks[j].global_rank}};
    }
  }
  return std::nullopt;
}

// Whether member i's op sits where its history put, every time and at least twice, the send or
// receive a member waiting for it in the cycle needs: right after the call before it. Else the new
// op may be a communicator's first collective that a rank reached after leaving out a send or
// receive (the p2p accounting names that one).
bool tookTheOwedOpsPlace(const CycleFacts& f, size_t i, const std::vector<size_t>& scc) {
  const RankData& me = f.set.ranks[i];
  const EventRecord& mine = *f.g.blocked(i);
  const auto isCall = [](const EventRecord& e) {
    return format::isCollective(e.op) || format::isP2p(e.op);
  };
  const EventRecord* prev = nullptr;
  for (const EventRecord& e : me.events) {
    if (e.index >= mine.index) break;
    if (isCall(e)) prev = &e;
  }
  if (prev == nullptr) return false;
  const StepKey prev_key = keyOf(f, me, *prev);
  for (size_t j : scc) {
    const EventRecord* theirs = f.g.blocked(j);
    if (j == i || theirs == nullptr || !format::isP2p(theirs->op) ||
        std::find(f.g.waitsFor(j).begin(), f.g.waitsFor(j).end(), i) == f.g.waitsFor(j).end()) {
      continue;
    }
    const format::OpType owed =
        theirs->op == format::OpType::kSend ? format::OpType::kRecv : format::OpType::kSend;
    int seen = 0;  // calls right after one like `prev`
    bool lacked = false;
    bool after_prev = false;  // the last call was one like `prev`
    for (const EventRecord& e : me.events) {
      if (e.index >= prev->index) break;
      if (!isCall(e)) continue;
      if (after_prev) {
        const bool is_owed =
            e.commId() == theirs->commId() && e.op == owed && e.peer() == theirs->rank();
        ++seen;
        lacked = lacked || !is_owed;
      }
      after_prev = prev_key.matches(me, e) && e.peer() == prev->peer();
    }
    if (seen >= 2 && !lacked) return true;
  }
  return false;
}

bool blockedInP2p(const CycleFacts& f, size_t i) {
  return f.g.blocked(i) != nullptr && format::isP2p(f.g.blocked(i)->op);
}

}  // namespace

EvidenceTable cycleTable(const CycleFacts& f, const std::vector<size_t>& cycle) {
  EvidenceTable table;
  table.title = "wait cycle";
  table.columns = {"rank",     "comm",      "seq",      "waits_in",
                   "for_rank", "peer_comm", "peer_seq", "peer_blocked_in"};
  for (size_t k = 0; k < cycle.size(); ++k) {
    const RankData& r = f.set.ranks[cycle[k]];
    const RankData& next = f.set.ranks[cycle[(k + 1) % cycle.size()]];
    const EventRecord& mine = *f.g.blocked(cycle[k]);
    const EventRecord& theirs = *f.g.blocked(cycle[(k + 1) % cycle.size()]);
    table.rows.push_back(
        {TableCell::of(int64_t{r.global_rank}), TableCell::of(shortCommId(mine.commId())),
         TableCell::of(static_cast<int64_t>(mine.op_seq)),
         TableCell::of(evidenceOpOf(r, mine, f.sites)), TableCell::of(int64_t{next.global_rank}),
         TableCell::of(shortCommId(theirs.commId())),
         TableCell::of(static_cast<int64_t>(theirs.op_seq)),
         TableCell::of(evidenceOpOf(next, theirs, f.sites))});
    table.marked.push_back(k == 0);
  }
  return table;
}

namespace {

// The one member of `scc` that deviated, or nullopt when none or several did.
std::optional<Deviation> findDeviant(const CycleFacts& f, const std::vector<size_t>& scc) {
  // First by the communicator's other members; when that names none or several, by each
  // member's own history (among those several), then by an op no rank issued there before.
  std::vector<Deviation> by_peers;
  for (size_t i : scc) {
    if (std::optional<Deviation> d = deviationOf(f, i, scc)) by_peers.push_back(std::move(*d));
  }
  const bool through_p2p =
      std::any_of(scc.begin(), scc.end(), [&](size_t i) { return blockedInP2p(f, i); });
  std::optional<Deviation> found;
  // A member that left a step of its own history out outweighs one the communicators' other
  // members find alone behind: that one may be behind only because it waits in the cycle (a
  // broadcast a rank skipped in a group holds its partner, which is then alone behind on the
  // world communicator: the partner is a waiter, never the culprit).
  if (by_peers.size() == 1 && scc.size() <= kMaxMembersForOwnTests) {
    std::vector<Deviation> own;
    for (size_t i : scc) {
      if (std::optional<Deviation> d = deviationFromOwnHistory(f, i, scc)) own.push_back(*d);
    }
    if (own.size() == 1 && own.front().rank != by_peers.front().rank) found = own.front();
  }
  if (!found && by_peers.size() == 1 && !through_p2p) found = std::move(by_peers.front());
  for (const auto deviation : {deviationFromOwnHistory, deviationByNewOp}) {
    // Both read events per pair of members (the new-op test every rank's): kept to cycles of a
    // few ranks (a deviant and the partners it holds), not two sides of thousands each.
    if (found || scc.size() > kMaxMembersForOwnTests) break;
    std::vector<Deviation> named;
    for (size_t i : scc) {
      const bool candidate =
          by_peers.empty() || std::any_of(by_peers.begin(), by_peers.end(),
                                          [&](const Deviation& d) { return d.rank == i; });
      if (!candidate) continue;
      // Through a send or receive, only a collective is taken for inserted: a rank's first send
      // or receive from a call site is no step its history lacks (a pipeline's first send of a
      // step is new each step; an all-reduce new to its communicator, issued before the step's
      // sends, is the insertion).
      if (through_p2p && deviation == deviationByNewOp &&
          (!format::isCollective(f.g.blocked(i)->op) || !tookTheOwedOpsPlace(f, i, scc))) {
        continue;
      }
      if (std::optional<Deviation> d = deviation(f, i, scc)) named.push_back(std::move(*d));
    }
    if (named.size() != 1) continue;
    found = std::move(named.front());
    for (Deviation& d : by_peers) {
      if (d.rank == found->rank) found = std::move(d);  // with the peers that issued the op
    }
  }
  return found;
}

// The verdict naming `found`, with `table` (the cycle) as its evidence.
Verdict deviantVerdict(const CycleFacts& f, const Deviation& found, EvidenceTable table) {
  const RankData& me = f.set.ranks[found.rank];
  const EventRecord& mine = *f.g.blocked(found.rank);
  const RankData& peer = f.set.ranks[found.their_rank];
  const EventRecord& theirs = *found.theirs;
  const CallSite my_site = callSiteOf(me, mine, f.sites);
  const CallSite their_site = callSiteOf(peer, theirs, f.sites);
  // The ranks it waits for in its own op, and whether they all wait for it in the op it missed.
  Instead instead;
  instead.others = found.peers;
  instead.they_wait_for_it = true;
  for (size_t j : f.g.waitsFor(found.rank)) {
    instead.waits_for.push_back(f.set.ranks[j].global_rank);
    instead.they_wait_for_it = instead.they_wait_for_it && f.g.blocked(j) != nullptr &&
                               f.g.blocked(j)->commId() == theirs.commId() &&
                               f.g.blocked(j)->op_seq == theirs.op_seq;
  }
  std::sort(instead.waits_for.begin(), instead.waits_for.end());
  Verdict v;
  v.ranks = {me.global_rank};
  if (!knownBefore(f, me, mine)) {
    // An op of its own, new to that communicator, issued where its peers issue theirs.
    v.cls = VerdictClass::kRankGatedCollective;
    v.comm_id = mine.commId();
    v.seq = mine.op_seq;
    v.op = mine.op;
    v.site = my_site;
    instead.kind = Instead::Kind::kBeforeTheirs;
    instead.op = evidenceOpOf(theirs, their_site);
    instead.comm_id = theirs.commId();
    v.headline = aloneHeadline(v, {}, instead);
    v.stacks = {my_site, their_site};
  } else {
    // Skipped, or put off after its next op (two ops swapped): the same until it issues it.
    v.cls = VerdictClass::kSkippedCollective;
    v.comm_id = theirs.commId();
    v.seq = theirs.op_seq;
    v.op = theirs.op;
    v.site = their_site;
    instead.kind = Instead::Kind::kOrPutOff;
    instead.op = evidenceOpOf(mine, my_site);
    instead.comm_id = mine.commId();
    v.headline = skippedHeadline(v, instead);
    v.stacks = {their_site, my_site};
  }
  v.tables.push_back(std::move(table));
  return v;
}

}  // namespace

std::optional<Verdict> blameDeviant(const CycleFacts& f, const std::vector<size_t>& scc,
                                    EvidenceTable table) {
  std::optional<Deviation> found = findDeviant(f, scc);
  if (!found) return std::nullopt;
  return deviantVerdict(f, *found, std::move(table));
}

}  // namespace ncclrec::analyzer
