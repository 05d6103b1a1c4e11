// findP2pMismatch (rules/p2p_mismatch.h): the sends and receives of every rank gathered once
// (P2pWaits), then each wait judged in the order it began: its peer's standing, a relay that
// dropped a send, the pair's accounting, a count or datatype that differs.
#include "analyzer/rules/p2p_mismatch.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/headlines.h"
#include "analyzer/p2p_blame.h"
#include "analyzer/phrases.h"
#include "analyzer/rank_ops.h"
#include "analyzer/wait_graph.h"

namespace ncclrec::analyzer::engine {
namespace {

using format::EventRecord;
using format::EventState;
using format::OpType;
using format::RankData;
using p2p::Located;
using p2p::Posted;

// Rows of the p2p table on each side of the unmatched seq.
constexpr uint64_t kP2pContext = 2;

// A receive `w` with no matching send, from a peer that is not blocked in a send or receive: in a
// ring or pipeline the peer relays what it receives from its own predecessors. When it completed
// more receives from them than it posted sends to `w`'s rank, it dropped a send: it is the culprit
// and `w`'s rank waits for it (p2p accounting per pair, docs/analyzer.md).
std::optional<Verdict> relayCulprit(const Posted& posted, const WaitGraph& g, const Located& w,
                                    const CallSites& sites) {
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
  std::vector<int> from_global;
  for (int s : sources) from_global.push_back(g.globalRankOf(e.commId(), s));
  std::sort(from_global.begin(), from_global.end());
  Verdict v;
  v.cls = VerdictClass::kP2pMismatch;
  v.ranks = {g.globalRankOf(e.commId(), relay)};
  v.comm_id = e.commId();
  v.seq = sent + 1;  // the send it never posted
  v.op = OpType::kSend;
  const CallSite waiter_site = callSiteOf(*w.rank, e, sites);
  P2pTally tally{sent, 0, {}};
  std::optional<CallSite> by_role;  // the waiter's site, when v.site is the role pairing with it
  if (sends != posted.end()) {
    const Located& last = sends->second.rbegin()->second;
    v.site = callSiteOf(*last.rank, *last.event, sites);
    tally.last_seq = last.event->op_seq;
    tally.last_site = v.site;
    // The send it dropped is of the role whose sends paired with the waiter's receives from the
    // same site before (a ring of two exchanges per step: not the last one it sent).
    const auto recvs = posted.find({e.commId(), OpType::kRecv, e.rank(), relay});
    if (recvs != posted.end()) {
      if (std::optional<CallSite> role =
              p2p::roleSite(sends->second, recvs->second, e.op_seq, waiter_site, v.site, sites)) {
        v.site = *role;
        by_role = waiter_site;
      }
    }
  }
  v.stacks = {v.site, waiter_site};
  if (!v.site.known()) v.stacks.erase(v.stacks.begin());
  v.headline = p2pRelayHeadline(v, received, from_global, w.rank->global_rank, tally, by_role);
  return v;
}

// The send or receive `r` is blocked in on a communicator other than `comm` (its oldest pending
// one), or nullptr: none, or a collective pending as well (then the collective holds it).
const EventRecord* blockedInP2pElsewhere(const RankData& r, uint64_t comm) {
  const EventRecord* there = nullptr;
  for (const EventRecord& e : r.events) {
    if (!isIncomplete(e)) continue;
    if (format::isCollective(e.op)) return nullptr;
    if (there == nullptr && format::isP2p(e.op) && e.commId() != comm) there = &e;
  }
  return there;
}

// Every rank's sends and receives, paired by (communicator, direction, per-peer seq), and the
// waits among them (pending, or failed because the peer left), oldest first.
class P2pWaits {
 public:
  P2pWaits(const format::LoadedSet& set, const CallSites& sites, const WaitGraph& g);
  // The first wait whose peer is at fault by the rules below; else the first unmatched wait
  // whose peer is blocked as well (a symptom); else nullopt.
  std::optional<Verdict> find();

 private:
  // One wait: nullopt when it decides nothing (the next one is judged). *symptom keeps the first
  // unmatched wait whose peer is blocked too.
  std::optional<Verdict> judge(const Located& w, std::optional<Verdict>* symptom);
  // The peer of an unmatched pending wait, blocked in a send or receive on another communicator:
  // by its own history it has yet to reach what `w` waits for (kBehind: held there, a symptom),
  // or it closed that run short and went on (kPast). Two pipelines on two communicators whose
  // ends wait on each other are the case (docs/analyzer.md, "p2p accounting per pair").
  p2p::Standing peerStanding(const Located& w, const RankData& peer) const;
  // `w` unmatched: who skipped or added a call, or nullopt when the peer is held elsewhere.
  std::optional<Verdict> unmatched(const Located& w, const RankData& peer, int peer_global,
                                   bool held_elsewhere, Verdict v, std::optional<Verdict>* symptom);
  // `w` matched by `match` with another count or datatype; nullopt when they agree.
  std::optional<Verdict> mismatched(const Located& w, const Located& match, int peer_global,
                                    Verdict v) const;
  // The pair's sends and receives, both directions, by per-peer seq around `seq` (the unmatched
  // one, in the direction from -> to): who posted what, and what is missing.
  EvidenceTable pairTable(uint64_t comm, int from, int to, uint64_t seq) const;
  EvidenceTable tableOf(const EventRecord& e) const {
    return e.op == OpType::kSend ? pairTable(e.commId(), e.rank(), e.peer(), e.op_seq)
                                 : pairTable(e.commId(), e.peer(), e.rank(), e.op_seq);
  }
  // Whether comm rank `r` of `comm` is itself blocked in a send or receive on it: then it cannot
  // post what its peer waits for, and that wait is a symptom of its own.
  bool blockedInP2p(uint64_t comm, int r) const;
  // p2p::heldByChainOn, computed once per (peer, comm).
  bool heldByChain(size_t peer, uint64_t comm);
  // The index into set_.ranks of a rank's recording.
  size_t indexOf(const RankData& r) const { return static_cast<size_t>(&r - set_.ranks.data()); }

  const format::LoadedSet& set_;
  const CallSites& sites_;
  const WaitGraph& g_;
  Posted posted_;
  std::vector<Located> waiting_;
  std::map<std::pair<size_t, uint64_t>, bool> held_;
};

P2pWaits::P2pWaits(const format::LoadedSet& set, const CallSites& sites, const WaitGraph& g)
    : set_(set), sites_(sites), g_(g) {
  for (const RankData& r : set.ranks) {
    for (const EventRecord& e : r.events) {
      if (e.commId() == 0 || e.rank() < 0 || !format::isP2p(e.op) || rejected(e) ||
          e.state == EventState::kEmpty) {
        continue;
      }
      posted_[{e.commId(), e.op, e.rank(), e.peer()}][e.op_seq] = Located{&r, &e};
      // A call that failed because its peer left had waited for it as well.
      if (isIncomplete(e) || lostPeer(e)) waiting_.push_back(Located{&r, &e});
    }
  }
  std::sort(waiting_.begin(), waiting_.end(), [](const Located& a, const Located& b) {
    return a.event->enqueueNs() < b.event->enqueueNs();
  });
}

EvidenceTable P2pWaits::pairTable(uint64_t comm, int from, int to, uint64_t seq) const {
  EvidenceTable t;
  const int g_from = g_.globalRankOf(comm, from);
  const int g_to = g_.globalRankOf(comm, to);
  t.title = "sends and receives between ranks " + std::to_string(std::min(g_from, g_to)) + " and " +
            std::to_string(std::max(g_from, g_to)) + " on comm " + shortCommId(comm);
  t.columns = {"from", "to", "seq", "send", "recv"};
  for (const auto& [a, b] : {std::pair{from, to}, std::pair{to, from}}) {
    const auto sends = posted_.find({comm, OpType::kSend, a, b});
    const auto recvs = posted_.find({comm, OpType::kRecv, b, a});
    uint64_t last = 0;
    if (sends != posted_.end()) last = std::max(last, sends->second.rbegin()->first);
    if (recvs != posted_.end()) last = std::max(last, recvs->second.rbegin()->first);
    // The reverse direction is shown around the same seq, or around its newest when shorter.
    const uint64_t center = std::min(seq, last);
    const uint64_t lo = center > kP2pContext ? center - kP2pContext : 1;
    for (uint64_t q = lo; q <= center + kP2pContext && q <= std::max(last, seq); ++q) {
      const auto cellOf = [&](const auto& list) {
        if (list == posted_.end()) return TableCell::none();
        const auto it = list->second.find(q);
        if (it == list->second.end()) return TableCell::none();
        return TableCell::of(evidenceOpOf(*it->second.rank, *it->second.event, sites_));
      };
      TableCell send = cellOf(sends), recv = cellOf(recvs);
      if (send.kind == TableCell::Kind::kNone && recv.kind == TableCell::Kind::kNone) continue;
      const int ga = a == from ? g_from : g_to, gb = a == from ? g_to : g_from;
      t.rows.push_back({TableCell::of(int64_t{ga}), TableCell::of(int64_t{gb}),
                        TableCell::of(static_cast<int64_t>(q)), std::move(send), std::move(recv)});
      t.marked.push_back(a == from && q == seq);
    }
  }
  return t;
}

bool P2pWaits::blockedInP2p(uint64_t comm, int r) const {
  return std::any_of(waiting_.begin(), waiting_.end(), [&](const Located& x) {
    return x.event->commId() == comm && x.event->rank() == r && isIncomplete(*x.event);
  });
}

bool P2pWaits::heldByChain(size_t peer, uint64_t comm) {
  const auto [it, added] = held_.try_emplace({peer, comm}, false);
  if (added) {
    it->second =
        p2p::heldByChainOn(set_, g_, peer, comm, [&](int r) { return blockedInP2p(comm, r); });
  }
  return it->second;
}

p2p::Standing P2pWaits::peerStanding(const Located& w, const RankData& peer) const {
  const EventRecord& e = *w.event;
  if (blockedInP2p(e.commId(), e.peer())) return p2p::Standing::kUnknown;
  const EventRecord* there = blockedInP2pElsewhere(peer, e.commId());
  if (there == nullptr) return p2p::Standing::kUnknown;
  const OpType other = counterpartOf(e.op);
  return p2p::standing(
      peer, *there,
      [&](const EventRecord& x) {
        return x.commId() == e.commId() && x.op == other && x.rank() == e.peer() &&
               x.peer() == e.rank() && !rejected(x) && x.state != EventState::kEmpty;
      },
      sites_);
}

std::optional<Verdict> P2pWaits::find() {
  std::optional<Verdict> symptom;
  for (const Located& w : waiting_) {
    if (std::optional<Verdict> v = judge(w, &symptom)) return v;
  }
  return symptom;
}

std::optional<Verdict> P2pWaits::judge(const Located& w, std::optional<Verdict>* symptom) {
  const EventRecord& e = *w.event;
  const std::optional<size_t> peer = g_.processOf(e.commId(), e.peer());
  if (!peer) return std::nullopt;  // no data for the peer: nothing to judge by
  const RankData& peer_rank = set_.ranks[*peer];
  // A peer that left NCCL without ending the communicator stopped (a truncation, p2p_stop.cc);
  // a failed call is judged here only when its peer finished its work and left.
  if (p2p::stoppedIn(peer_rank, e.commId()) || p2p::aborted(peer_rank)) return std::nullopt;
  if (!isIncomplete(e) && !p2p::finishedComm(peer_rank, e.commId())) return std::nullopt;
  const auto list = posted_.find({e.commId(), counterpartOf(e.op), e.peer(), e.rank()});
  const bool is_unmatched = list == posted_.end() || !list->second.contains(e.op_seq);
  const p2p::Standing standing =
      is_unmatched && isIncomplete(e) ? peerStanding(w, peer_rank) : p2p::Standing::kUnknown;
  if (standing == p2p::Standing::kPast) {
    Verdict missing = p2p::missingCounterpart(posted_, g_, w, sites_);
    missing.tables.push_back(tableOf(e));
    return missing;
  }
  const bool held_elsewhere = standing == p2p::Standing::kBehind;
  if (e.op == OpType::kRecv && !blockedInP2p(e.commId(), e.peer()) && !held_elsewhere) {
    if (std::optional<Verdict> relay = relayCulprit(posted_, g_, w, sites_)) {
      relay->tables.push_back(pairTable(e.commId(), e.peer(), e.rank(), e.op_seq));
      return relay;
    }
  }
  // This rank's own call as the verdict, until a rule below names another.
  const CallSite site = callSiteOf(*w.rank, e, sites_);
  Verdict v;
  v.tables.push_back(tableOf(e));
  v.cls = VerdictClass::kP2pMismatch;
  v.ranks = {w.rank->global_rank};
  v.comm_id = e.commId();
  v.seq = e.op_seq;
  v.op = e.op;
  v.site = site;
  v.stacks = {site};
  if (is_unmatched)
    return unmatched(w, peer_rank, peer_rank.global_rank, held_elsewhere, std::move(v), symptom);
  return mismatched(w, list->second.at(e.op_seq), peer_rank.global_rank, std::move(v));
}

std::optional<Verdict> P2pWaits::unmatched(const Located& w, const RankData& peer, int peer_global,
                                           bool held_elsewhere, Verdict v,
                                           std::optional<Verdict>* symptom) {
  const EventRecord& e = *w.event;
  const OpType other = counterpartOf(e.op);
  const auto list = posted_.find({e.commId(), other, e.peer(), e.rank()});
  P2pTally theirs;
  if (list != posted_.end() && !list->second.empty()) {
    const Located& last = list->second.rbegin()->second;
    theirs = {list->second.size(), last.event->op_seq, callSiteOf(*last.rank, *last.event, sites_)};
  }
  v.headline = p2pUnmatchedHeadline(v, peer_global, theirs);
  if (blockedInP2p(e.commId(), e.peer()) || held_elsewhere) {
    if (!*symptom) *symptom = std::move(v);
    return std::nullopt;
  }
  // A peer blocked in a collective that waits for others than this rank is held up there: the
  // unmatched op is a symptom of that collective (the next wait is looked at, and the
  // communicators' alignment after that). Unless all it waits for there wait in sends and
  // receives of this communicator.
  if (!p2p::freeOrWaitsFor(set_, g_, indexOf(peer), indexOf(*w.rank)) &&
      !heldByChain(indexOf(peer), e.commId())) {
    return std::nullopt;
  }
  // Per pair and per role: the side that posted fewer than the other pairs moved skipped one
  // (the peer, which went on without it); else this rank posted one too many.
  const int from = e.op == OpType::kSend ? e.rank() : e.peer();
  const int to = e.op == OpType::kSend ? e.peer() : e.rank();
  if (p2p::shortSideDeviates(posted_, e.commId(), from, to)) {
    Verdict missing = p2p::missingCounterpart(posted_, g_, w, sites_);
    missing.tables = std::move(v.tables);
    return missing;
  }
  return v;
}

std::optional<Verdict> P2pWaits::mismatched(const Located& w, const Located& match, int peer_global,
                                            Verdict v) const {
  const EventRecord& e = *w.event;
  if (match.event->count == e.count && match.event->dtype == e.dtype) return std::nullopt;
  // A loop that posted one call fewer on one side pairs each later call with the other side's
  // previous one: that side's short run is the cause (p2p_blame.h, shortRunOf).
  if (const std::optional<p2p::ShortRun> run = p2p::shortRunOf(posted_, w, match, sites_)) {
    const EventRecord& c = *run->culprit.event;
    const EventRecord& paired = run->culprit.event == &e ? *match.event : e;
    const CallSite c_site = callSiteOf(*run->culprit.rank, c, sites_);
    const CallSite p_site =
        callSiteOf(run->culprit.rank == w.rank ? *match.rank : *w.rank, paired, sites_);
    Verdict s;
    s.tables = std::move(v.tables);
    s.cls = VerdictClass::kP2pMismatch;
    s.ranks = {run->culprit.rank->global_rank};
    s.comm_id = c.commId();
    s.seq = c.op_seq;
    s.op = c.op;
    s.site = run->site;
    s.stacks = {run->site, c_site, p_site};
    s.headline = p2pShortRunHeadline(s, {evidenceOpOf(c, c_site), c.commId()},
                                     {evidenceOpOf(paired, p_site), paired.commId()});
    return s;
  }
  const CallSite other_site = callSiteOf(*match.rank, *match.event, sites_);
  v.headline = p2pCountHeadline(v, peer_global, evidenceOpOf(e, v.site),
                                evidenceOpOf(*match.event, other_site));
  v.stacks.push_back(other_site);
  return v;
}

}  // namespace

std::optional<Verdict> findP2pMismatch(const Engine& en) {
  return P2pWaits(en.set(), en.callsites(), en.waits()).find();
}

}  // namespace ncclrec::analyzer::engine
