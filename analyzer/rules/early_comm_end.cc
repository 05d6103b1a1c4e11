// The early_comm_end rule (comm_aborted, comm_destroyed): rules/early_comm_end.h.
#include "analyzer/rules/early_comm_end.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/headlines.h"
#include "analyzer/phrases.h"
#include "analyzer/rank_ops.h"
#include "analyzer/rules/comm_calls.h"

namespace ncclrec::analyzer {

using format::EventRecord;
using format::EventState;
using format::OpType;
using format::RankData;

namespace {

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
  CommEnd words;
  const auto onItsComm = [&](const EventRecord& e, const CallSite& site) {
    return OpOn{evidenceOpOf(e, site), e.commId()};
  };
  if (found->last != nullptr) {
    words.last = onItsComm(*found->last, callSiteOf(rd, *found->last, sites));
  }
  if (found->went_on != nullptr) {
    words.went_on = onItsComm(*found->went_on, callSiteOf(rd, *found->went_on, sites));
  }
  words.others = others;
  words.theirs = onItsComm(*theirs, their_site);
  v.headline = commEndHeadline(v, words);
  v.tables.push_back(endsTable(set, sites, end.commId(), found->rank));
  return v;
}

}  // namespace ncclrec::analyzer
