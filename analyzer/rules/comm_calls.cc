#include "analyzer/rules/comm_calls.h"

#include <algorithm>

#include "analyzer/phrases.h"
#include "analyzer/rank_ops.h"
#include "analyzer/verdict.h"

namespace ncclrec::analyzer {

using format::EventRecord;
using format::EventState;
using format::OpType;
using format::RankData;

bool countedCollective(const EventRecord& e) {
  return format::isCollective(e.op) && e.commId() != 0 && e.state != EventState::kEmpty &&
         !rejected(e);
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

bool holdsComm(const RankData& r, uint64_t comm) {
  for (const format::Comm& c : r.comms) {
    if (c.comm_id == comm) return true;
  }
  return std::any_of(r.events.begin(), r.events.end(),
                     [&](const EventRecord& e) { return e.commId() == comm; });
}

}  // namespace ncclrec::analyzer
