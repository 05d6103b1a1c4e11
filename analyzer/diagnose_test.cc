#include "analyzer/diagnose.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "analyzer/testing/job_builder.h"
#include "format/bbox_layout.h"

namespace ncclrec::analyzer {
namespace {

using format::EventRecord;
using format::EventState;
using format::OpType;
using format::RankData;
using namespace testing;  // Job, Op, the call sites (analyzer/testing/job_builder.h)

TEST(DiagnoseTest, GatedCollectiveOnRankZeroIsNamedNotTheHealthyRanks) {
  // samples/gated_save: rank 0's checkpoint all-reduce meets the others' 7th gradient
  // all-reduce. A seq-only matcher sees the size mismatch at #7 and blames ranks 1-3 or
  // calls it a size mismatch; the diff names rank 0's insertion.
  Job job(4);
  job.ops(0, concat(repeat({kTrain}, 6), {{kSave, 1}}), true);
  for (int r = 1; r < 4; ++r) job.ops(r, repeat({kTrain}, 7), true);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankGatedCollective) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{0});
  EXPECT_EQ(v.seq, 7u);
  EXPECT_EQ(v.op, OpType::kAllReduce);
  EXPECT_EQ(shortFunctionName(v.site.function), "saveCheckpoint");
  EXPECT_EQ(v.headline,
            "rank 0 alone (rank == 0) issued ncclAllReduce #7 on comm c0ffee00 from "
            "saveCheckpoint() train.cc:33; ranks 1-3 issued ncclAllReduce from trainStep() "
            "train.cc:27 as their #7; ranks 1-3 wait for it in #7 from trainStep() train.cc:27");
  ASSERT_EQ(v.stacks.size(), 2u);
  EXPECT_EQ(v.stacks[0].function, kSave.function);  // full name kept for the stacks
  // Evidence: ranks 1-3 collapse into one row.
  ASSERT_EQ(v.evidence.size(), 2u);
  EXPECT_EQ(v.evidence[0].ranks, std::vector<int>{0});
  EXPECT_EQ(v.evidence[1].ranks, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(v.evidence[0].ops.back().count, 1u);
  EXPECT_EQ(v.evidence[0].ops.front().seq, 5u);
  EXPECT_EQ(exitCodeFor(v.cls), 3);
}

TEST(DiagnoseTest, GatedCollectiveFoundByTheDiffWhenMismatchedOpsCompleted) {
  // On a GPU the mismatched pair may complete: rank 0 runs on, one op ahead, and the hang shows
  // at the end, where ranks 1-3 wait for a 10th all-reduce that rank 0 never issues.
  Job job(4);
  job.ops(0, concat(concat(repeat({kTrain}, 3), {{kSave, 1}}), repeat({kTrain}, 6)));
  job.rank(0).exited = true;
  for (int r = 1; r < 4; ++r) job.ops(r, repeat({kTrain}, 11), true);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankGatedCollective) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{0});
  EXPECT_EQ(v.seq, 4u);
}

TEST(DiagnoseTest, GatedOnAllButOneRankNamesTheSubset) {
  Job job(4);
  for (int r = 0; r < 3; ++r) job.ops(r, concat(repeat({kTrain}, 4), {{kSave, 1}}), true);
  job.ops(3, repeat({kTrain}, 5), true);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankGatedCollective) << v.headline;
  EXPECT_EQ(v.ranks, (std::vector<int>{0, 1, 2}));
  EXPECT_NE(v.headline.find("(rank != 3)"), std::string::npos) << v.headline;
}

TEST(DiagnoseTest, SkippedCollectiveNamesTheRankThatSkippedIt) {
  // Each step: gradients (trainStep), then the loss (logLoss). Rank 2 skips the loss of step 3.
  const std::vector<Op> step = {{kTrain}, {kLoss, 1}};
  std::vector<Op> healthy, skipper;
  for (int s = 0; s < 4; ++s) {
    healthy = concat(healthy, step);
    skipper = concat(skipper, s == 3 ? std::vector<Op>{{kTrain}, {kTrain}} : step);
  }
  Job job(3);
  job.ops(0, healthy, true).ops(1, healthy, true).ops(2, skipper, true);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kSkippedCollective) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{2});
  EXPECT_EQ(v.seq, 8u);
  EXPECT_EQ(shortFunctionName(v.site.function), "logLoss");
}

TEST(DiagnoseTest, SubstitutionsAreClassifiedByTheArgumentThatDiffers) {
  struct Case {
    Op bad;
    VerdictClass cls;
    std::string says;
  };
  const Op good{kTrain};
  const std::vector<Case> cases = {
      {{kTrain, 1024}, VerdictClass::kSizeMismatch, "rank 1 passes count 1024, ranks 0,2"},
      {{kTrain, 4096, OpType::kAllReduce, kInt32}, VerdictClass::kDtypeMismatch, "int32"},
      {{kTrain, 4096, OpType::kAllReduce, kFloat, kMax}, VerdictClass::kRedopMismatch, "max"},
      {{kTrain, 4096, OpType::kAllGather}, VerdictClass::kOpMismatch, "issued ncclAllGather"},
  };
  for (const Case& c : cases) {
    Job job(3);
    job.ops(0, concat(repeat(good, 3), {good}), true);
    job.ops(1, concat(repeat(good, 3), {c.bad}), true);
    job.ops(2, concat(repeat(good, 3), {good}), true);
    const Verdict v = job.diagnose();
    EXPECT_EQ(v.cls, c.cls) << v.headline;
    EXPECT_EQ(v.ranks, std::vector<int>{1}) << v.headline;
    EXPECT_EQ(v.seq, 4u);
    EXPECT_NE(v.headline.find(c.says), std::string::npos) << v.headline;
  }
}

TEST(DiagnoseTest, RootMismatch) {
  const Op bcast{kTrain, 16, OpType::kBroadcast, kFloat, -1, 0};
  Op other = bcast;
  other.root = 1;
  Job job(2);
  job.ops(0, {bcast, bcast}, true).ops(1, {bcast, other}, true);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRootMismatch) << v.headline;
  EXPECT_EQ(v.seq, 2u);
}

TEST(DiagnoseTest, AnotherCollectiveInTheSlotOfAHangIsAnOpMismatch) {
  // Each step broadcasts the learning rate, then all-reduces the gradients; from step 2 on rank 2
  // all-reduces first. The hang stops every stream at the slot: a swap or a skip cannot be told
  // apart, and the slot holds two different collectives.
  const Op lr{{"syncLearningRate(ncclComm*, float*)", 45}, 1, OpType::kBroadcast, kFloat, -1, 0};
  const std::vector<Op> step = {lr, {kTrain}};
  const std::vector<Op> history = concat(step, step);
  Job job(3);
  job.ops(0, concat(history, {lr}), true).ops(1, concat(history, {lr}), true);
  job.ops(2, concat(history, {{kTrain}}), true);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kOpMismatch) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{2});
  EXPECT_EQ(v.seq, 5u);
  EXPECT_EQ(shortFunctionName(v.site.function), "trainStep");
  EXPECT_NE(v.headline.find("rank 2 issued ncclAllReduce, ranks 0-1 issued ncclBroadcast"),
            std::string::npos)
      << v.headline;
}

TEST(DiagnoseTest, SameLengthOtherDatatypeFromAnotherLineIsADtypeMismatch) {
  // if (compress) allreduce(fp16 copy) else allreduce(grads): one call of the caller, two lines.
  const Op half{{"(anonymous namespace)::trainStep(ncclComm*, std::vector<float>&)", 21},
                4096,
                OpType::kAllReduce,
                kInt32};
  Job job(3);
  job.ops(0, repeat({kTrain}, 4), true).ops(2, repeat({kTrain}, 4), true);
  job.ops(1, concat(repeat({kTrain}, 3), {half}), true);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kDtypeMismatch) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{1});
  EXPECT_EQ(v.seq, 4u);
}

TEST(DiagnoseTest, RankThatStoppedOnARefusedCallIsAnNcclError) {
  // Rank 2's 4th all-reduce returned ncclInvalidArgument (a destroyed reduction op) and the
  // program exited on the error; the others wait in their 4th.
  Job job(3);
  job.ops(0, repeat({kTrain}, 4), true).ops(1, repeat({kTrain}, 4), true);
  job.ops(2, repeat({kTrain}, 4), true);
  job.rank(2).events.back().state = EventState::kFailed;
  job.rank(2).events.back().result = 4;  // ncclInvalidArgument
  job.rank(2).exited = true;
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kNcclError) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{2});
  EXPECT_EQ(shortFunctionName(v.site.function), "trainStep");
  EXPECT_NE(v.headline.find("returned NCCL error 4 (invalid argument), then it exited; ranks 0-1 "
                            "wait for it in ncclAllReduce #4"),
            std::string::npos)
      << v.headline;
}

TEST(DiagnoseTest, RanksStuckInInitWaitForARankWithNoData) {
  // WORLD_SIZE=3, but only ranks 0 and 1 were started: both wait in ncclCommInitRank.
  Job job(3);
  for (int r = 0; r < 2; ++r) {
    EventRecord e;
    e.op = OpType::kCommInitRank;
    e.setCommId(kComm);
    e.setRank(r);
    e.setNranks(3);
    e.state = EventState::kEnqueued;
    e.setEnqueueNs(kT0);
    job.rank(r).events.push_back(e);
  }
  format::LoadedSet set = job.set();
  set.ranks.pop_back();  // rank 2 left no recording
  const Verdict v = analyzer::diagnose(set);
  // The rank that never started is the culprit; the ranks in the creation only wait for it.
  EXPECT_EQ(v.cls, VerdictClass::kCommMemberMissing) << v.headline;
  EXPECT_EQ(exitCodeFor(v.cls), 3);
  EXPECT_EQ(v.ranks, std::vector<int>{2});
  EXPECT_EQ(v.waiting, (std::vector<int>{0, 1}));
  EXPECT_EQ(v.headline,
            "rank 2 never joined ncclCommInitRank of comm c0ffee00 (3 ranks) from unknown call "
            "site: rank 2 has no recording (it never started, or started without the recorder); "
            "ranks 0-1 wait in the creation for it; every member of a communicator must create it");
  ASSERT_EQ(v.missing.size(), 1u);
  EXPECT_NE(v.missing[0].find("RANK, WORLD_SIZE"), std::string::npos) << v.missing[0];
}

TEST(DiagnoseTest, OnlyTheCallSiteDifferingIsNotADivergence) {
  // if (rank == 0) allreduce(x) else allreduce(x): two sites, one pairing, no hang.
  const Op other_site{{"branch(ncclComm*)", 50}};
  Job job(2);
  job.ops(0, {{kTrain}, other_site, {kTrain}}).ops(1, {{kTrain}, {kTrain}, {kTrain}});
  EXPECT_EQ(job.diagnose().cls, VerdictClass::kNoHang);
}

TEST(DiagnoseTest, GatedOpOfTheSameShapeIsFoundWhenTheOthersRunOut) {
  // rank 0's extra op pairs with the others' next one; they finish one op early and leave rank 0
  // waiting. The stop at the end is explained by the insertion at #3.
  const Op extra{kSave};
  Job job(3);
  job.ops(0, {{kTrain}, {kTrain}, extra, {kTrain}, {kTrain}}, true);
  for (int r = 1; r < 3; ++r) {
    job.ops(r, repeat({kTrain}, 4));
    job.rank(r).exited = true;
  }
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankGatedCollective) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{0});
  EXPECT_EQ(v.seq, 3u);
}

TEST(DiagnoseTest, SkippedRunOfCollectivesIsOneSkip) {
  // ncclrec-trainer --inject=nan_skip with two gradient buckets: rank 2 skips both of a step's
  // bucket all-reduces and issues the step's loss all-reduce where the others issue bucket 0.
  const std::vector<Op> step = {{kTrain}, {kTrain, 1024}, {kLoss, 2}};
  std::vector<Op> healthy, skipper;
  for (int s = 0; s < 3; ++s) {
    healthy = concat(healthy, step);
    skipper = concat(skipper, step);
  }
  Job job(3);
  job.ops(0, concat(healthy, {{kTrain}}), true).ops(1, concat(healthy, {{kTrain}}), true);
  job.ops(2, concat(skipper, {{kLoss, 2}}), true);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kSkippedCollective) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{2});
  EXPECT_EQ(v.seq, 10u);
  EXPECT_EQ(shortFunctionName(v.site.function), "trainStep");
}

TEST(DiagnoseTest, GatedOpOfTheSameShapeIsFoundWhenTheNextSlotBlocksEveryone) {
  // ncclrec-trainer --inject=gated_save: rank 0's extra one-float all-reduce in saveCheckpoint
  // pairs with the others' one-float barrier; rank 0's barrier then meets the others' next
  // gradient all-reduce, shapes differ, and every rank blocks there before any stream ends.
  const Op barrier{kLoss, 1};
  Job job(3);
  job.ops(0, {{kTrain}, {kTrain}, {kSave, 1}, barrier}, true);
  for (int r = 1; r < 3; ++r) job.ops(r, {{kTrain}, {kTrain}, barrier, {kTrain}}, true);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankGatedCollective) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{0});
  EXPECT_EQ(v.seq, 3u);
  EXPECT_EQ(shortFunctionName(v.site.function), "saveCheckpoint");
}

TEST(DiagnoseTest, CrossCommunicatorDeadlockIsACycle) {
  // Both ran A#1 and B#1; then rank 0 issues A#2 while rank 1 issues B#2: each waits for the
  // other, in a different communicator.
  Op on_b{kLoss, 1};
  on_b.comm = kOtherComm;
  Job job(2);
  job.ops(0, {{kTrain}, on_b, {kTrain}}, true).ops(1, {{kTrain}, on_b, on_b}, true);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kCrossCommDeadlock) << v.headline;
  EXPECT_EQ(v.ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(v.headline,
            "ranks 0-1 deadlock across communicators: rank 0 waits in ncclAllReduce #2 on comm "
            "c0ffee00 from trainStep() train.cc:27 for rank 1, which waits in ncclAllReduce #2 on "
            "comm beef0000 from logLoss() train.cc:40 for rank 0");
  // The cycle as a table: each rank, where it waits, and where the rank it waits for is blocked.
  ASSERT_EQ(v.tables.size(), 1u);
  const EvidenceTable& t = v.tables[0];
  EXPECT_EQ(t.title, "wait cycle");
  EXPECT_EQ(t.columns, (std::vector<std::string>{"rank", "comm", "seq", "waits_in", "for_rank",
                                                 "peer_comm", "peer_seq", "peer_blocked_in"}));
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.marked, (std::vector<bool>{true, false}));
  const auto& r0 = t.rows[0];
  EXPECT_EQ(r0[0], TableCell::of(int64_t{0}));
  EXPECT_EQ(r0[1], TableCell::of(std::string("c0ffee00")));
  EXPECT_EQ(r0[2], TableCell::of(int64_t{2}));
  EXPECT_EQ(r0[3].op.op, OpType::kAllReduce);
  EXPECT_EQ(r0[3].op.state, EventState::kEnqueued);
  EXPECT_EQ(r0[3].op.site.line, 27);
  EXPECT_EQ(r0[4], TableCell::of(int64_t{1}));
  EXPECT_EQ(r0[5], TableCell::of(std::string("beef0000")));
  EXPECT_EQ(r0[6], TableCell::of(int64_t{2}));
  EXPECT_EQ(r0[7].op.site.line, 40);
  EXPECT_EQ(t.rows[1][0], TableCell::of(int64_t{1}));
  EXPECT_EQ(t.rows[1][4], TableCell::of(int64_t{0}));
  EXPECT_EQ(t.rows[1][5], TableCell::of(std::string("c0ffee00")));
}

TEST(DiagnoseTest, P2pSendWithoutAMatchingRecv) {
  const auto p2p = [](OpType op, int peer, uint64_t count) {
    Op o{{"exchange(ncclComm*)", 60}, count, op};
    o.root = peer;
    return o;
  };
  // Rank 0 sends twice to rank 1; rank 1 posts one recv, then moves on to its next all-reduce.
  Job job(3);
  job.ops(0, {p2p(OpType::kSend, 1, 8), p2p(OpType::kSend, 1, 8)}, true);
  job.ops(1, {p2p(OpType::kRecv, 0, 8), {kTrain}}, true);
  job.ops(2, {{kTrain}}, true);
  // The per-peer seq: both of rank 0's sends are to rank 1, #1 and #2.
  for (EventRecord& e : job.rank(0).events) e.setPeer(1);
  job.rank(0).events[1].op_seq = 2;
  job.rank(1).events[0].setPeer(0);
  job.rank(1).events[1].op_seq = 1;
  job.rank(1).events[1].setPeer(-1);
  job.rank(2).events[0].setPeer(-1);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kP2pMismatch) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{0});
  EXPECT_EQ(v.seq, 2u);
  EXPECT_NE(v.headline.find("has no matching ncclRecv: rank 1 posted 1 ncclRecvs from rank 0"),
            std::string::npos)
      << v.headline;
  // The pair's table: rank 0's sends to rank 1 against rank 1's receives from rank 0, by seq.
  ASSERT_EQ(v.tables.size(), 1u);
  const EvidenceTable& t = v.tables[0];
  EXPECT_EQ(t.title, "sends and receives between ranks 0 and 1 on comm c0ffee00");
  EXPECT_EQ(t.columns, (std::vector<std::string>{"from", "to", "seq", "send", "recv"}));
  ASSERT_EQ(t.rows.size(), 2u);  // nothing posted from rank 1 to rank 0
  EXPECT_EQ(t.marked, (std::vector<bool>{false, true}));
  EXPECT_EQ(t.rows[0][2], TableCell::of(int64_t{1}));
  EXPECT_EQ(t.rows[0][3].op.state, EventState::kCompleted);
  EXPECT_EQ(t.rows[0][4].op.op, OpType::kRecv);
  EXPECT_EQ(t.rows[1][0], TableCell::of(int64_t{0}));
  EXPECT_EQ(t.rows[1][1], TableCell::of(int64_t{1}));
  EXPECT_EQ(t.rows[1][2], TableCell::of(int64_t{2}));
  EXPECT_EQ(t.rows[1][3].op.state, EventState::kEnqueued);
  EXPECT_EQ(t.rows[1][4].kind, TableCell::Kind::kNone);
}

TEST(DiagnoseTest, NoHangWhenEverythingCompleted) {
  Job job(2);
  job.ops(0, repeat({kTrain}, 3)).ops(1, repeat({kTrain}, 3));
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kNoHang);
  EXPECT_EQ(exitCodeFor(v.cls), 0);
  ASSERT_EQ(v.status.size(), 2u);
}

TEST(DiagnoseTest, UndecidedSaysWhichRankHasNoData) {
  Job job(3);
  job.ops(0, repeat({kTrain}, 3), true).ops(1, repeat({kTrain}, 3), true);
  format::LoadedSet set = job.set();
  set.ranks.pop_back();  // rank 2 left nothing
  const Verdict v = diagnose(set);
  EXPECT_EQ(v.cls, VerdictClass::kUndecided) << v.headline;
  EXPECT_EQ(exitCodeFor(v.cls), 4);
  ASSERT_EQ(v.missing.size(), 1u);
  EXPECT_NE(v.missing[0].find("no data for rank 2"), std::string::npos) << v.missing[0];
  EXPECT_EQ(rankStateName(v.status[2].state), "no data");
}

TEST(DiagnoseTest, FailedOpsAreIgnored) {
  Job job(2);
  job.ops(0, repeat({kTrain}, 3)).ops(1, repeat({kTrain}, 3));
  EventRecord failed = job.rank(0).events.back();
  failed.index = 3;
  failed.state = EventState::kFailed;
  failed.result = 4;  // ncclInvalidArgument: refused, never issued, pairs with nothing
  failed.count = 7;
  job.rank(0).events.push_back(failed);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kNcclError) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{0});
}

TEST(DiagnoseTest, EmptySetDoesNotCrash) {
  EXPECT_EQ(diagnose(format::LoadedSet{}).cls, VerdictClass::kNoHang);
}

TEST(DiagnoseTest, RandomRecordingsNeverCrash) {
  // Arbitrary, inconsistent recordings (duplicate and missing seqs, unknown stacks, ops of every
  // kind and state): diagnose() must return some verdict. Seeded: reproducible.
  std::mt19937 rng(12345);
  const auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  for (int round = 0; round < 3000; ++round) {
    const int world = 1 + pick(5);
    format::LoadedSet set;
    for (int r = 0; r < world; ++r) {
      RankData d;
      d.global_rank = pick(8) == 0 ? -1 : r;
      d.world_size = world + pick(2);
      d.exited = pick(4) == 0;
      d.fatal_signal = pick(8) == 0 ? 9 : 0;
      d.heartbeat_ns = pick(3) * kSec;
      d.source = pick(2) ? format::SourceKind::kDump : format::SourceKind::kBlackBox;
      d.stacks[0] = {0, {{1, "/m", static_cast<uint64_t>(pick(3)), "", "", 0}}, false};
      const int n = pick(12);
      for (int i = 0; i < n; ++i) {
        EventRecord e;
        e.index = static_cast<uint64_t>(i);
        e.op = static_cast<OpType>(1 + pick(13));
        e.setCommId(pick(6) == 0 ? 0 : (pick(2) ? kComm : kOtherComm));
        e.op_seq = static_cast<uint64_t>(pick(6));
        e.setRank(pick(world + 1) - 1);
        e.setPeer(pick(world + 1) - 1);
        e.count = static_cast<uint64_t>(pick(3));
        e.dtype = pick(3) - 1;
        e.state = static_cast<EventState>(pick(5));
        e.result = pick(7);
        e.setStackId(pick(3) == 0 ? 0 : format::kNoStack);
        e.setEnqueueNs(pick(5) * kSec);
        e.setEndNs(pick(2) ? e.enqueueNs() + 1 : 0);
        d.events.push_back(e);
      }
      set.ranks.push_back(std::move(d));
    }
    const Verdict v = diagnose(set);
    EXPECT_FALSE(v.headline.empty()) << round;
  }
}

TEST(FormatRanksTest, CollapsesRuns) {
  EXPECT_EQ(formatRanks({}), "");
  EXPECT_EQ(formatRanks({0}), "0");
  EXPECT_EQ(formatRanks({1, 2, 3}), "1-3");
  EXPECT_EQ(formatRanks({0, 2, 5, 6, 7}), "0,2,5-7");
}

}  // namespace
}  // namespace ncclrec::analyzer
