#include "analyzer/lifecycle_rules.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/phrases.h"
#include "analyzer/rank_ops.h"

namespace ncclrec::analyzer {
namespace {

using format::EventRecord;
using format::EventState;
using format::OpType;
using format::RankData;

bool countedCollective(const EventRecord& e) {
  return format::isCollective(e.op) && e.commId() != 0 && e.state != EventState::kEmpty &&
         !rejected(e);
}

std::string opAt(const EventRecord& e, const CallSite& site) {
  const bool numbered = format::isCollective(e.op) || format::isP2p(e.op);
  return std::string(format::opName(e.op)) +
         (numbered ? " #" + std::to_string(e.op_seq) : " on comm " + shortCommId(e.commId())) +
         " from " + describeCallSite(site);
}

// How the others stand in the op they issued past the culprit's end.
std::string standing(const EventRecord& e) {
  if (e.state == EventState::kFailed) {
    return "failed in it (NCCL error " + std::to_string(e.result) + ")";
  }
  return isIncomplete(e) ? "wait in it" : "completed it without that rank";
}

// A rank's earliest collective on `comm` past `seq`, or nullptr.
const EventRecord* firstPast(const RankData& r, uint64_t comm, uint64_t seq) {
  const EventRecord* best = nullptr;
  for (const EventRecord& e : r.events) {
    if (e.commId() == comm && countedCollective(e) && e.op_seq > seq &&
        (best == nullptr || e.op_seq < best->op_seq)) {
      best = &e;
    }
  }
  return best;
}

// Where a rank that skipped a split of `comm` went on: its first collective on `comm` past
// collective #seq, else the first op it issued after reaching that collective that never
// completed (pending or failed): point-to-point work on `comm`, or work on a communicator of its
// own later split (its one split paired with the others' earlier one); or its end of `comm`
// itself (destroyed or finalized there: it finished without the split;
// LifecycleRulesTest.ASkipperThatDestroyedTheParentAndLeftIsNamed); or nullptr.
const EventRecord* wentOnPast(const RankData& r, uint64_t comm, uint64_t seq) {
  if (const EventRecord* collective = firstPast(r, comm, seq)) return collective;
  uint64_t reached = 0;
  for (const EventRecord& e : r.events) {
    if (e.commId() == comm && countedCollective(e)) reached = std::max(reached, e.op_seq);
    if (reached < seq || e.commId() == 0 || rejected(e)) continue;
    if (isCommOp(e) && (isIncomplete(e) || e.state == EventState::kFailed)) return &e;
    if (e.commId() == comm && (e.op == OpType::kCommDestroy || e.op == OpType::kCommFinalize)) {
      return &e;
    }
  }
  return nullptr;
}

// A rank's first send or receive on `comm` that never completed (pending, or failed after it was
// issued: the peer left), or nullptr. After a peer's abort, hostnccl and NCCL fail these with a
// remote error.
const EventRecord* firstP2pLeft(const RankData& r, uint64_t comm) {
  for (const EventRecord& e : r.events) {
    if (e.commId() == comm && format::isP2p(e.op) && !rejected(e) &&
        (isIncomplete(e) || e.state == EventState::kFailed)) {
      return &e;
    }
  }
  return nullptr;
}

bool holdsComm(const RankData& r, uint64_t comm) {
  for (const format::Comm& c : r.comms) {
    if (c.comm_id == comm) return true;
  }
  return std::any_of(r.events.begin(), r.events.end(),
                     [&](const EventRecord& e) { return e.commId() == comm; });
}

struct EarlyEnd {
  size_t rank = 0;
  const EventRecord* end = nullptr;      // the abort or destroy
  const EventRecord* last = nullptr;     // its last collective on the communicator, or nullptr
  const EventRecord* went_on = nullptr;  // its first NCCL op after a destroy
};

// Whether event k of rank r, an abort or destroy, ends a communicator while the rank itself had
// nothing pending or failed: a deliberate end, not a reaction to an error.
bool cleanEnd(const RankData& rd, size_t k, EarlyEnd& out) {
  const EventRecord& end = rd.events[k];
  for (size_t j = 0; j < k; ++j) {
    const EventRecord& e = rd.events[j];
    if (e.state == EventState::kFailed && !rejected(e)) return false;
    if (e.commId() != end.commId()) continue;
    if (isCommOp(e) && isIncomplete(e)) return false;
    if (countedCollective(e) && (out.last == nullptr || e.op_seq > out.last->op_seq)) out.last = &e;
  }
  for (size_t j = k + 1; j < rd.events.size() && out.went_on == nullptr; ++j) {
    const EventRecord& e = rd.events[j];
    if (isCommOp(e) && e.commId() != end.commId() && e.commId() != 0) {
      out.went_on = &e;
    }
  }
  out.end = &end;
  // A rank that destroys a communicator and exits is a rank that exited (rank_exited says after
  // which op); one that destroys it and goes on left its peers on it.
  return end.op == OpType::kCommAbort || out.went_on != nullptr;
}

EvidenceTable endsTable(const format::LoadedSet& set, const CallSites& sites, uint64_t comm,
                        size_t culprit) {
  EvidenceTable t;
  t.title = "last op and end of comm " + shortCommId(comm) + " on each rank";
  t.columns = {"rank", "last_op", "then"};
  for (size_t i = 0; i < set.ranks.size(); ++i) {
    const RankData& r = set.ranks[i];
    if (!holdsComm(r, comm)) continue;
    const EventRecord* last = nullptr;
    const EventRecord* end = nullptr;
    for (const EventRecord& e : r.events) {
      if (e.commId() != comm) continue;
      if (countedCollective(e) && (last == nullptr || e.op_seq > last->op_seq)) last = &e;
      if ((e.op == OpType::kCommAbort || e.op == OpType::kCommDestroy) && end == nullptr) end = &e;
    }
    t.rows.push_back({TableCell::of(int64_t{r.global_rank}),
                      last ? TableCell::of(evidenceOpOf(r, *last, sites)) : TableCell::none(),
                      end ? TableCell::of(evidenceOpOf(r, *end, sites)) : TableCell::none()});
    t.marked.push_back(i == culprit);
  }
  return t;
}

}  // namespace

std::optional<Verdict> findEarlyCommEnd(const format::LoadedSet& set, const CallSites& sites) {
  std::optional<EarlyEnd> found;
  std::vector<int> others;
  const EventRecord* theirs = nullptr;
  size_t their_rank = 0;
  for (size_t i = 0; i < set.ranks.size(); ++i) {
    const RankData& rd = set.ranks[i];
    for (size_t k = 0; k < rd.events.size(); ++k) {
      const EventRecord& e = rd.events[k];
      if ((e.op != OpType::kCommAbort && e.op != OpType::kCommDestroy) || e.commId() == 0) continue;
      if (found && found->end->enqueueNs() <= e.enqueueNs()) continue;
      EarlyEnd end;
      end.rank = i;
      if (!cleanEnd(rd, k, end)) continue;
      const uint64_t last_seq = end.last != nullptr ? end.last->op_seq : 0;
      std::vector<int> past;
      const EventRecord* first = nullptr;
      size_t first_rank = 0;
      for (size_t q = 0; q < set.ranks.size(); ++q) {
        if (q == i) continue;
        const EventRecord* p = firstPast(set.ranks[q], e.commId(), last_seq);
        const bool p2p = p == nullptr;
        if (p2p) p = firstP2pLeft(set.ranks[q], e.commId());
        if (p == nullptr) continue;
        past.push_back(set.ranks[q].global_rank);
        // A collective past the end names the slot best; else a send or receive left unmatched.
        if (first == nullptr || (!p2p && (format::isP2p(first->op) || p->op_seq < first->op_seq))) {
          first = p;
          first_rank = q;
        }
      }
      if (past.empty()) continue;
      std::sort(past.begin(), past.end());
      found = end;
      others = std::move(past);
      theirs = first;
      their_rank = first_rank;
      break;  // a rank's first early end is its deviation
    }
  }
  if (!found) return std::nullopt;
  const RankData& rd = set.ranks[found->rank];
  const EventRecord& end = *found->end;
  Verdict v;
  v.cls = end.op == OpType::kCommAbort ? VerdictClass::kCommAborted : VerdictClass::kCommDestroyed;
  v.ranks = {rd.global_rank};
  v.comm_id = end.commId();
  v.seq = theirs->op_seq;
  v.op = end.op;
  v.site = callSiteOf(rd, end, sites);
  const CallSite their_site = callSiteOf(set.ranks[their_rank], *theirs, sites);
  v.stacks = {v.site, their_site};
  v.headline = "rank " + std::to_string(rd.global_rank) +
               (end.op == OpType::kCommAbort ? " aborted" : " destroyed") + " comm " +
               shortCommId(end.commId()) + " (" + std::string(format::opName(end.op)) + " from " +
               describeCallSite(v.site) + ")";
  if (found->last != nullptr) {
    v.headline += " after its " + opAt(*found->last, callSiteOf(rd, *found->last, sites));
  } else {
    v.headline += " before any collective on it";
  }
  if (found->went_on != nullptr) {
    v.headline += " and went on (" + std::string(format::opName(found->went_on->op)) + " on comm " +
                  shortCommId(found->went_on->commId()) + " from " +
                  describeCallSite(callSiteOf(rd, *found->went_on, sites)) + ")";
  }
  v.headline += "; " + ranksWord(others) + " issued " + opAt(*theirs, their_site) + " on it and " +
                standing(*theirs);
  v.tables.push_back(endsTable(set, sites, end.commId(), found->rank));
  return v;
}

namespace {

// One ncclCommSplit call on a parent, and how far the caller's collectives on the parent had got.
struct SplitCall {
  const EventRecord* e = nullptr;
  uint64_t after_seq = 0;
};

// Which of the callers' splits the skippers did not make: the first whose call site differs from
// the skipper's split at the same place in its calls (the skippers made the others in the same
// order), or the first past the skippers' last.
size_t skippedSplit(const format::LoadedSet& set, const CallSites& sites,
                    const std::map<size_t, std::vector<SplitCall>>& by_rank, size_t caller,
                    const std::vector<size_t>& skippers) {
  const std::vector<SplitCall>& made = by_rank.at(caller);
  size_t skipped = SIZE_MAX;
  for (size_t i : skippers) {
    const auto it = by_rank.find(i);
    const size_t n = it == by_rank.end() ? 0 : it->second.size();
    size_t k = 0;
    while (k < n && k < made.size() &&
           callSiteKey(callSiteOf(set.ranks[caller], *made[k].e, sites)) ==
               callSiteKey(callSiteOf(set.ranks[i], *it->second[k].e, sites))) {
      ++k;
    }
    skipped = std::min(skipped, k);
  }
  return skipped;
}

using SplitsByProcess = std::map<size_t, std::vector<SplitCall>>;

// parent comm -> process -> its splits of it, in call order.
std::map<uint64_t, SplitsByProcess> gatherSplits(const format::LoadedSet& set) {
  std::map<uint64_t, SplitsByProcess> splits;
  for (size_t i = 0; i < set.ranks.size(); ++i) {
    std::map<uint64_t, uint64_t> reached;
    for (const EventRecord& e : set.ranks[i].events) {
      if (countedCollective(e)) reached[e.commId()] = std::max(reached[e.commId()], e.op_seq);
      if (e.op == OpType::kCommSplit && e.commId() != 0 && !rejected(e)) {
        splits[e.commId()][i].push_back(SplitCall{&e, reached[e.commId()]});
      }
    }
  }
  return splits;
}

// A split of `comm` that some members made (callers) and the others did not (skippers), who went
// on past that point on the parent instead; indexes are processes.
struct PartialSplit {
  uint64_t comm = 0;
  std::vector<size_t> members, callers, skippers;
  size_t fewest = 0;                        // the fewest splits a member made
  size_t skipped = 0;                       // the first split the skippers never made
  const SplitCall* call = nullptr;          // the earliest of the callers' calls of it
  size_t caller = 0;                        // the process that made `call`
  std::vector<const EventRecord*> instead;  // each skipper's op past that point
};

std::optional<PartialSplit> partialSplitOf(const format::LoadedSet& set, const CallSites& sites,
                                           uint64_t comm, const SplitsByProcess& by_rank) {
  PartialSplit ps;
  ps.comm = comm;
  for (size_t i = 0; i < set.ranks.size(); ++i) {
    if (holdsComm(set.ranks[i], comm)) ps.members.push_back(i);
  }
  ps.fewest = SIZE_MAX;
  for (size_t i : ps.members) {
    const auto it = by_rank.find(i);
    ps.fewest = std::min(ps.fewest, it == by_rank.end() ? size_t{0} : it->second.size());
  }
  for (size_t i : ps.members) {
    const auto it = by_rank.find(i);
    (it != by_rank.end() && it->second.size() > ps.fewest ? ps.callers : ps.skippers).push_back(i);
  }
  if (ps.callers.empty() || ps.skippers.empty()) return std::nullopt;
  // The first split the skippers never made, and where the callers made it.
  ps.skipped = skippedSplit(set, sites, by_rank, ps.callers.front(), ps.skippers);
  bool unfinished = false;
  for (size_t i : ps.callers) {
    const SplitCall& c = by_rank.at(i)[ps.skipped];
    if (ps.call == nullptr || c.after_seq < ps.call->after_seq) {
      ps.call = &c;
      ps.caller = i;
    }
    unfinished |= isIncomplete(*c.e) || c.e->state == EventState::kFailed;
  }
  // The skippers went on past that point on the parent (a rank that stopped before it is a rank
  // that exited or is stuck: other rules say so).
  for (size_t i : ps.skippers) {
    const EventRecord* next = wentOnPast(set.ranks[i], comm, ps.call->after_seq);
    if (next == nullptr) break;
    ps.instead.push_back(next);
    unfinished |= isIncomplete(*next) || next->state == EventState::kFailed;
  }
  if (ps.instead.size() != ps.skippers.size() || !unfinished) return std::nullopt;
  return ps;
}

// Each member's splits of the parent, and what it did at that point.
EvidenceTable splitTable(const format::LoadedSet& set, const CallSites& sites,
                         const PartialSplit& ps, const SplitsByProcess& by_rank,
                         const std::vector<int>& named) {
  EvidenceTable t;
  t.title = "ncclCommSplit calls on comm " + shortCommId(ps.comm);
  t.columns = {"rank", "splits", "at_that_point"};
  for (size_t i : ps.members) {
    const auto it = by_rank.find(i);
    const size_t n = it == by_rank.end() ? 0 : it->second.size();
    const EventRecord* at = n > ps.fewest ? it->second[ps.skipped].e
                                          : firstPast(set.ranks[i], ps.comm, ps.call->after_seq);
    t.rows.push_back(
        {TableCell::of(int64_t{set.ranks[i].global_rank}), TableCell::of(static_cast<int64_t>(n)),
         at ? TableCell::of(evidenceOpOf(set.ranks[i], *at, sites)) : TableCell::none()});
    t.marked.push_back(std::binary_search(named.begin(), named.end(), set.ranks[i].global_rank));
  }
  return t;
}

}  // namespace

std::optional<Verdict> findPartialSplit(const format::LoadedSet& set, const CallSites& sites) {
  for (const auto& [comm, by_rank] : gatherSplits(set)) {
    const std::optional<PartialSplit> ps = partialSplitOf(set, sites, comm, by_rank);
    if (!ps) continue;
    std::vector<int> caller_ranks, skipper_ranks, all;
    for (size_t i : ps->callers) caller_ranks.push_back(set.ranks[i].global_rank);
    for (size_t i : ps->skippers) skipper_ranks.push_back(set.ranks[i].global_rank);
    std::sort(caller_ranks.begin(), caller_ranks.end());
    std::sort(skipper_ranks.begin(), skipper_ranks.end());
    std::merge(caller_ranks.begin(), caller_ranks.end(), skipper_ranks.begin(), skipper_ranks.end(),
               std::back_inserter(all));
    Verdict v;
    v.comm_id = comm;
    v.op = OpType::kCommSplit;
    v.site = callSiteOf(set.ranks[ps->caller], *ps->call->e, sites);
    const CallSite other_site = callSiteOf(set.ranks[ps->skippers[0]], *ps->instead[0], sites);
    v.stacks = {v.site, other_site};
    const std::string split =
        "ncclCommSplit of comm " + shortCommId(comm) + " from " + describeCallSite(v.site);
    const std::string next = opAt(*ps->instead[0], other_site);
    // The fewer side deviated: skippers fewer than callers skipped it, callers fewer than
    // skippers made a split of their own.
    if (ps->callers.size() >= ps->skippers.size()) {
      v.cls = VerdictClass::kSkippedCollective;
      v.ranks = skipper_ranks;
      v.headline =
          ranksWord(skipper_ranks) + " skipped " + split + " that " + ranksWord(caller_ranks) +
          " called" +
          (ps->call->after_seq > 0 ? " after collective #" + std::to_string(ps->call->after_seq)
                                   : std::string()) +
          "; " + (skipper_ranks.size() == 1 ? "it" : "they") + " issued " + next + " instead";
    } else {
      v.cls = VerdictClass::kRankGatedCollective;
      v.ranks = caller_ranks;
      v.headline = ranksWord(caller_ranks) + (caller_ranks.size() == 1 ? " alone (" : " (") +
                   subsetCondition(caller_ranks, all) + ") called " + split + "; " +
                   ranksWord(skipper_ranks) + " issued " + next + " instead";
    }
    v.tables.push_back(splitTable(set, sites, *ps, by_rank, v.ranks));
    return v;
  }
  return std::nullopt;
}

}  // namespace ncclrec::analyzer

namespace ncclrec::analyzer {

std::optional<Verdict> findLoneCollective(const format::LoadedSet& set, const CallSites& sites) {
  struct Use {
    const EventRecord* first = nullptr;  // its first collective on the communicator
    size_t rank = 0;
    bool ended = false;  // destroyed or finalized it
  };
  std::map<uint64_t, std::map<size_t, Use>> uses;  // comm -> rank index -> use
  for (size_t i = 0; i < set.ranks.size(); ++i) {
    uint64_t last_comm = 0;
    Use* last_use = nullptr;  // uses[last_comm][i]: map nodes stay put
    for (const EventRecord& e : set.ranks[i].events) {
      if (e.commId() == 0 || e.state == EventState::kEmpty || rejected(e)) continue;
      if (last_use == nullptr || e.commId() != last_comm) {
        last_comm = e.commId();
        last_use = &uses[e.commId()][i];
      }
      Use& u = *last_use;
      u.rank = i;
      if (format::isCollective(e.op) && u.first == nullptr) u.first = &e;
      const bool end = e.op == OpType::kCommDestroy || e.op == OpType::kCommFinalize;
      if (end && e.state == EventState::kCompleted && u.first == nullptr) u.ended = true;
    }
  }
  for (const auto& [comm, members] : uses) {
    std::vector<const Use*> issuers;
    std::vector<int> others;
    bool someone_ended = false;
    for (const auto& [i, u] : members) {
      if (u.first != nullptr) {
        issuers.push_back(&u);
      } else {
        others.push_back(set.ranks[i].global_rank);
        someone_ended = someone_ended || u.ended;
      }
    }
    if (issuers.empty() || !someone_ended || issuers.size() >= others.size()) continue;
    const EventRecord& first = *issuers.front()->first;
    const bool lone = std::all_of(issuers.begin(), issuers.end(), [&](const Use* u) {
      return unfinished(*u->first) && u->first->op == first.op && u->first->count == first.count;
    });
    if (!lone) continue;
    Verdict v;
    v.cls = VerdictClass::kRankGatedCollective;
    for (const Use* u : issuers) v.ranks.push_back(set.ranks[u->rank].global_rank);
    std::sort(v.ranks.begin(), v.ranks.end());
    std::sort(others.begin(), others.end());
    v.comm_id = comm;
    v.seq = first.op_seq;
    v.op = first.op;
    v.site = callSiteOf(set.ranks[issuers.front()->rank], first, sites);
    v.stacks = {v.site};
    v.headline = ranksWord(v.ranks) + " alone issued " + std::string(format::opName(v.op)) + " #" +
                 std::to_string(v.seq) + " on comm " + shortCommId(comm) + " from " +
                 describeCallSite(v.site) + "; " + ranksWord(others) +
                 " never issued a collective on it (one destroyed it when done)";
    return v;
  }
  return std::nullopt;
}

}  // namespace ncclrec::analyzer
