// Classifying the slot where ranks issued different ops (divergence.cc) when the streams stop
// before they line up again: substitution, skip, swap.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analyzer/diagnose.h"
#include "analyzer/testing/job_builder.h"

namespace ncclrec::analyzer {
namespace {

using namespace testing;  // Job, Op, the call sites (analyzer/testing/job_builder.h)

const Site kEmaReduce{"syncEmaWeights(NcclBlock const&)", 20};
const Site kEmaBcast{"syncEmaWeights(NcclBlock const&)", 22};
const Site kEmaScatter{"syncEmaWeights(NcclBlock const&)", 28};
const Site kGrads{"reduceScatterGrads(NcclBlock const&)", 28};
const Site kParams{"broadcastParameters(NcclBlock const&)", 22};
const Site kMergeBcast{"mergeExpertOutputs(NcclBlock const&)", 22};
const Site kMergeReduce{"mergeExpertOutputs(NcclBlock const&)", 20};

Op allReduce(const Site& s, uint64_t count) { return Op{s, count}; }
Op broadcast(const Site& s, uint64_t count) {
  Op o{s, count, OpType::kBroadcast};
  o.root = 0;
  return o;
}
Op reduce(const Site& s, uint64_t count) {
  Op o{s, count, OpType::kReduce};
  o.root = 0;
  return o;
}
Op reduceScatter(const Site& s, uint64_t count) { return Op{s, count, OpType::kReduceScatter}; }

// Marks the last `n` ops of `rank` as enqueued and not completed (a hang, or ops behind it).
void pendingTail(Job& job, int rank, size_t n) {
  auto& events = job.rank(rank).events;
  for (size_t i = events.size() - n; i < events.size(); ++i) {
    events[i].state = EventState::kEnqueued;
    events[i].setEndNs(0);
  }
}

TEST(DivergenceTest, AnotherCollectiveOfTheSameLengthFromTheSameFunctionIsAnOpMismatch) {
  // faultgen seed 8: in syncEmaWeights() rank 1 issues a reduce-scatter of 4 floats where its
  // peers broadcast 4 floats, and every rank blocks there. Nothing follows the slot to line up,
  // and the reduce-scatter's line is new: it read as an inserted (gated) collective.
  const std::vector<Op> step = {allReduce(kEmaReduce, 1024), broadcast(kEmaBcast, 4),
                                reduceScatter(kGrads, 16)};
  Job job(3);
  for (int r = 0; r < 3; ++r) {
    job.ops(r, concat(concat(step, step), {allReduce(kEmaReduce, 1024)}));
    job.ops(r, {r == 1 ? reduceScatter(kEmaScatter, 4) : broadcast(kEmaBcast, 4)}, true);
  }
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kOpMismatch) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{1});
  EXPECT_EQ(v.seq, 8u);
  EXPECT_EQ(shortFunctionName(v.site.function), "syncEmaWeights");
}

TEST(DivergenceTest, ARankThatGoesOnAsTheHistoryDoesSkippedTheSlot) {
  // faultgen seed 71: rank 1 skips syncEmaWeights()'s reduce and goes on with the next block,
  // mergeExpertOutputs() (a broadcast, then an all-reduce); its peers wait in the reduce.
  const std::vector<Op> step = {broadcast(kParams, 256), broadcast(kEmaBcast, 4),
                                reduce(kEmaReduce, 1024), broadcast(kMergeBcast, 1024),
                                allReduce(kMergeReduce, 4)};
  Job job(3);
  for (int r = 0; r < 3; ++r) {
    job.ops(r, concat(concat(step, step), {broadcast(kParams, 256), broadcast(kEmaBcast, 4)}));
    if (r == 1) {
      job.ops(r, {broadcast(kMergeBcast, 1024), allReduce(kMergeReduce, 4)});
      pendingTail(job, r, 2);
    } else {
      job.ops(r, {reduce(kEmaReduce, 1024)}, true);
    }
  }
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kSkippedCollective) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{1});
  EXPECT_EQ(v.seq, 13u);
  EXPECT_EQ(shortFunctionName(v.site.function), "syncEmaWeights");
}

TEST(DivergenceTest, TwoCollectivesSwappedWhereTheStreamsStopStayAMismatch) {
  // samples/op_order: the last rank all-reduces before it broadcasts; a skip would look the same
  // up to the slot, and nothing after it tells them apart (faultgen seeds 29 and 327: a skipped
  // op where every rank blocks at the slot reads as this mismatch).
  const std::vector<Op> step = {broadcast(kParams, 1), allReduce(kMergeReduce, 4096)};
  Job job(3);
  for (int r = 0; r < 3; ++r) {
    job.ops(r, concat(step, step));
    job.ops(r, {r == 2 ? allReduce(kMergeReduce, 4096) : broadcast(kParams, 1)}, true);
  }
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kOpMismatch) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{2});
}

TEST(DivergenceTest, ARankThatWentPastTheSlotOnAnotherCommunicatorSkippedIt) {
  // faultgen seed 236: each step ranks 0 and 1 reduce on their pair communicator, rank 1
  // broadcasts with rank 2 on another, then ranks 0 and 1 all-gather on the pair. In step 3 rank
  // 1 skips the reduce: it broadcasts (which its history issues only after the reduce) and
  // blocks in the all-gather against rank 0's reduce. A swap would have issued the all-gather
  // before the broadcast; the rank went past the reduce's place.
  Op bcast = broadcast(kParams, 16);
  bcast.comm = kOtherComm;
  const Op red = reduce(kEmaReduce, 16), gather{kMergeBcast, 256, OpType::kAllGather};
  const auto twoSteps = [&] {
    Job job(3);
    for (int step = 0; step < 2; ++step) {
      job.ops(0, {red, gather});
      job.ops(1, {red, bcast, gather});
      job.ops(2, {bcast});
    }
    return job;
  };
  Job job = twoSteps();
  job.ops(0, {red}, true);
  job.ops(1, {bcast, gather}, true);
  job.ops(2, {bcast, bcast}, true);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kSkippedCollective) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{1});
  EXPECT_EQ(v.seq, 5u);
  EXPECT_EQ(shortFunctionName(v.site.function), "syncEmaWeights") << v.headline;

  // Had it all-gathered before the broadcast, the records would be those of a swap.
  Job swapped = twoSteps();
  swapped.ops(0, {red}, true);
  swapped.ops(1, {gather}, true);
  swapped.ops(2, {bcast}, true);
  EXPECT_EQ(swapped.diagnose().cls, VerdictClass::kOpMismatch) << swapped.diagnose().headline;
}

// Ops between ncclGroupStart and ncclGroupEnd, marked as issued in the group.
void grouped(Job& job, int rank, const std::vector<Op>& ops, bool last_pending = false) {
  Op start{kEmaReduce, 0, OpType::kGroupStart}, end{kEmaReduce, 0, OpType::kGroupEnd};
  start.comm = end.comm = 0;  // a group names no communicator
  job.ops(rank, {start});
  const size_t first = job.rank(rank).events.size();
  job.ops(rank, ops);
  auto& events = job.rank(rank).events;
  for (size_t i = first; i < events.size(); ++i) events[i].flags |= format::kEventInGroup;
  if (last_pending) pendingTail(job, rank, 1);
  job.ops(rank, {end});
}

TEST(DivergenceTest, ARankThatClosedTheGroupHoldingTheSlotWithoutItSkippedIt) {
  // faultgen seeds 579 and 712: each step both ranks all-gather and reduce on another
  // communicator and all-gather on this one in one group, then broadcast here. In step 3 rank 0's
  // group ends without its all-gather here, and its broadcast meets rank 1's all-gather. A swap
  // would have kept the all-gather in the group; the rank closed the group without it.
  Op other_gather{kGrads, 256, OpType::kAllGather}, other_reduce = reduce(kEmaBcast, 4);
  other_gather.comm = other_reduce.comm = kOtherComm;
  const Op gather{kEmaScatter, 64, OpType::kAllGather}, bcast = broadcast(kParams, 4);
  const auto twoSteps = [&] {
    Job job(2);
    for (int step = 0; step < 2; ++step) {
      for (int r = 0; r < 2; ++r) {
        grouped(job, r, {other_gather, other_reduce, gather});
        job.ops(r, {bcast});
      }
    }
    return job;
  };
  Job job = twoSteps();
  grouped(job, 0, {other_gather, other_reduce});
  job.ops(0, {bcast}, true);
  grouped(job, 1, {other_gather, other_reduce, gather}, true);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kSkippedCollective) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{0});
  EXPECT_EQ(v.seq, 5u);
  EXPECT_EQ(shortFunctionName(v.site.function), "syncEmaWeights") << v.headline;

  // Had it broadcast inside the group, before its all-gather, the records would be a swap's.
  Job swapped = twoSteps();
  grouped(swapped, 0, {other_gather, other_reduce, bcast}, true);
  grouped(swapped, 1, {other_gather, other_reduce, gather}, true);
  EXPECT_EQ(swapped.diagnose().cls, VerdictClass::kOpMismatch) << swapped.diagnose().headline;
}

TEST(DivergenceTest, ARankWhoseGroupHoldsTheNextOpButNotTheSlotsSkippedIt) {
  // faultgen seeds 91 and 250: each step's group holds two collectives on this communicator; in
  // step 3 rank 1's group holds only the second, which meets the others' first. The same
  // all-reduce with another datatype reads as a datatype mismatch, a broadcast's next op as an op
  // mismatch, when nothing else tells; the group, closed without the first, does.
  Op ints = allReduce(kMergeReduce, 16);
  ints.dtype = 2;  // ncclInt32
  const Op floats = allReduce(kEmaReduce, 16);
  const auto twoSteps = [&] {
    Job job(3);
    for (int step = 0; step < 2; ++step) {
      for (int r = 0; r < 3; ++r) grouped(job, r, {floats, ints});
    }
    return job;
  };
  Job job = twoSteps();
  for (int r = 0; r < 3; ++r) {
    if (r == 1) {
      grouped(job, r, {ints}, true);
    } else {
      grouped(job, r, {floats, ints});
      pendingTail(job, r, 3);
    }
  }
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kSkippedCollective) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{1});
  EXPECT_EQ(shortFunctionName(v.site.function), "syncEmaWeights") << v.headline;

  // With the two in the group in the other order, the rank passed another datatype.
  Job swapped = twoSteps();
  for (int r = 0; r < 3; ++r) {
    grouped(swapped, r, r == 1 ? std::vector<Op>{ints, floats} : std::vector<Op>{floats, ints});
    pendingTail(swapped, r, 3);
  }
  EXPECT_EQ(swapped.diagnose().cls, VerdictClass::kDtypeMismatch) << swapped.diagnose().headline;
}

TEST(DivergenceTest, ARankThatWentOnToTheNextStepsGroupSkippedTheSlot) {
  // faultgen seed 5007: each step ranks 0 and 1 reduce to rank 1 on their communicator, then
  // issue one group: an all-reduce there and a reduce on another communicator. In step 3 rank 1
  // skips the reduce; its group's all-reduce meets rank 0's reduce. The group's reduce on the
  // other communicator is what the rank did besides, whether it comes before the all-reduce in
  // the group or after (the calls inside a group are not an order of operations): the rank went
  // on to the next step.
  const Site loss{"reduceLoss(NcclBlock const&)", 25};
  const Site ema{"syncEmaWeights(NcclBlock const&)", 25};
  Op red = reduce(loss, 16), other = reduce(ema, 1024), ints = allReduce(kEmaReduce, 16);
  red.root = other.root = 1;
  red.redop = kMax;
  ints.dtype = kInt32;
  other.comm = kOtherComm;
  for (bool all_reduce_first : {true, false}) {
    const std::vector<Op> group =
        all_reduce_first ? std::vector<Op>{ints, other} : std::vector<Op>{other, ints};
    Job job(2);
    for (int step = 0; step < 2; ++step) {
      for (int r = 0; r < 2; ++r) {
        job.ops(r, {red});
        grouped(job, r, group);
      }
    }
    job.ops(0, {red}, true);
    grouped(job, 1, group);
    pendingTail(job, 1, 3);
    const Verdict v = job.diagnose();
    EXPECT_EQ(v.cls, VerdictClass::kSkippedCollective) << all_reduce_first << ": " << v.headline;
    EXPECT_EQ(v.ranks, std::vector<int>{1}) << all_reduce_first;
    EXPECT_EQ(shortFunctionName(v.site.function), "reduceLoss") << v.headline;
  }

  // A group its history never issued after the reduce tells nothing: the slot's op stays what
  // the rank passed there.
  Job job(2);
  for (int step = 0; step < 2; ++step) {
    for (int r = 0; r < 2; ++r) {
      job.ops(r, {red});
      grouped(job, r, {ints, other});
    }
  }
  job.ops(0, {red}, true);
  Op smaller = other;
  smaller.count = 512;
  grouped(job, 1, {ints, smaller});
  pendingTail(job, 1, 3);
  EXPECT_EQ(job.diagnose().cls, VerdictClass::kOpMismatch) << job.diagnose().headline;
}

TEST(DivergenceTest, OthersThatWentPastARootedSlotDoNotTellASkipFromASwap) {
  // faultgen seeds 35 and 327, samples/op_order: rank 3 all-reduces where the others broadcast
  // from a root; the ranks that only receive went on to the all-reduce, the root waits for rank
  // 3. Rank 3 skipped the broadcast or swapped the two: the same records, whichever rank the
  // root is (the verdict once depended on whether the lowest other rank was the root).
  for (int root : {0, 1}) {
    Op bcast = broadcast(kParams, 1);
    bcast.root = root;
    const std::vector<Op> step = {bcast, allReduce(kMergeReduce, 4096)};
    Job job(4);
    for (int r = 0; r < 4; ++r) {
      job.ops(r, concat(step, step));
      if (r == 3) {
        job.ops(r, {allReduce(kMergeReduce, 4096)}, true);
      } else if (r == root) {
        job.ops(r, {bcast}, true);
      } else {
        job.ops(r, step, true);
      }
    }
    const Verdict v = job.diagnose();
    EXPECT_EQ(v.cls, VerdictClass::kOpMismatch) << "root " << root << ": " << v.headline;
    EXPECT_EQ(v.ranks, std::vector<int>{3}) << "root " << root;
  }
}

}  // namespace
}  // namespace ncclrec::analyzer
