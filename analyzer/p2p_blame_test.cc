// Point-to-point accounting per pair and per role (p2p_blame.h) and a stopped rank seen through a
// peer's send or receive (p2p_stop.cc): the shapes of the random fault generator's failures
// (docs/accuracy.md, patterns P1, P2 and P6).
#include "analyzer/p2p_blame.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "analyzer/diagnose.h"
#include "analyzer/testing/job_builder.h"

namespace ncclrec::analyzer {
namespace {

using namespace testing;  // Job, Op, the call sites (analyzer/testing/job_builder.h)

const Site kSendAct{"sendActivations(ncclComm*, std::vector<float>&, int)", 70};
const Site kRecvAct{"recvActivations(ncclComm*, std::vector<float>&, int)", 74};
const Site kSendGrad{"sendGradients(ncclComm*, std::vector<float>&, int)", 78};
const Site kHalo{"exchangeHalo(ncclComm*, float*)", 82};
const Site kGather{"gatherEmbeddings(ncclComm*, float*)", 86};
const Op kLossOp{kLoss, 1};

Op p2pOp(OpType op, int peer, const Site& site) {
  Op o{site, 256, op};
  o.root = peer;
  return o;
}
Op send(int peer, const Site& site = kSendAct) { return p2pOp(OpType::kSend, peer, site); }
Op recv(int peer, const Site& site = kRecvAct) { return p2pOp(OpType::kRecv, peer, site); }

void renumber(Job& job, int world) {
  for (int r = 0; r < world; ++r) numberLikeNccl(job.rank(r));
}
TEST(P2pBlameTest, PipelineHeadThatSkippedASendIsTheCulprit) {
  // Stage 0 of 3 sends no activation in step 2 and goes on to the loss all-reduce; stage 1 waits
  // in its 3rd receive, stage 2 behind it. Stage 0 relays nothing, but the link 1 -> 2 moved 3.
  Job job(3);
  job.ops(0, {send(1), kLossOp, send(1), kLossOp, kLossOp}, true);
  job.ops(1, {recv(0), send(2), kLossOp, recv(0), send(2), kLossOp, recv(0)}, true);
  job.ops(2, {recv(1), kLossOp, recv(1), kLossOp, recv(1)}, true);
  renumber(job, 3);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kP2pMismatch) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{0});
  EXPECT_EQ(v.waiting, (std::vector<int>{1, 2}));
  EXPECT_EQ(v.op, OpType::kSend);
  EXPECT_EQ(v.seq, 3u);
  EXPECT_EQ(shortFunctionName(v.site.function), "sendActivations");
  EXPECT_EQ(v.headline,
            "rank 0 posted 2 ncclSends to rank 1 on comm c0ffee00 (the last, #2, from "
            "sendActivations() train.cc:70) but rank 1 posted 3 ncclRecvs from it (the other pairs "
            "of the communicator moved up to 3); ranks 1-2 wait for it in ncclRecv #3 from "
            "recvActivations() train.cc:74");
}

TEST(P2pBlameTest, CollectiveSkippedBeforeASendIsTheCauseOfTheUnmatchedSend) {
  // Each step all-gathers, then rank 0 sends to rank 1 (faultgen seed 54). Rank 0 skips the
  // all-gather of step 2 and posts its 3rd send; rank 1 waits in that all-gather after 2
  // receives. The extra send is a symptom: rank 0 went past the collective, not rank 1 short of
  // a receive.
  const Op gather{kGather, 64, OpType::kAllGather};
  Job job(2);
  job.ops(0, {gather, send(1, kHalo), gather, send(1, kHalo), send(1, kHalo)}, true);
  job.ops(1, {gather, recv(0, kHalo), gather, recv(0, kHalo), gather}, true);
  renumber(job, 2);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kSkippedCollective) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{0});
  EXPECT_EQ(v.waiting, std::vector<int>{1});
  EXPECT_EQ(v.op, OpType::kAllGather);
  EXPECT_EQ(v.seq, 3u);
  EXPECT_EQ(shortFunctionName(v.site.function), "gatherEmbeddings");
}

TEST(P2pBlameTest, CollectiveSkippedBeforeASendIsFoundWhenAPeerSawItComplete) {
  // Faultgen seeds 1337, 1417: each step a broadcast from rank 2, then 2 activations down the
  // pipeline 0 -> 1 -> 2. Rank 0 skips the broadcast of step 2 and sends; rank 1's broadcast
  // completed (the root's data came), it relays one activation and waits to send to rank 2,
  // which waits in the broadcast for rank 0. The receiver that posted fewer is not the culprit.
  Op bcast{{"broadcastParameters(ncclComm*)", 90}, 64, OpType::kBroadcast};
  bcast.root = 2;
  Job job(3);
  job.ops(0, {bcast, send(1), send(1), bcast, send(1), send(1), send(1), send(1)}, true);
  job.ops(1,
          {bcast, recv(0), send(2), recv(0), send(2), bcast, recv(0), send(2), recv(0), send(2),
           bcast, recv(0), send(2)},
          true);
  job.ops(2, {bcast, recv(1), recv(1), bcast, recv(1), recv(1), bcast}, true);
  renumber(job, 3);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kSkippedCollective) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{0}) << v.headline;
  EXPECT_EQ(v.op, OpType::kBroadcast);
  EXPECT_EQ(v.seq, 3u);
  EXPECT_EQ(shortFunctionName(v.site.function), "broadcastParameters");
}

TEST(P2pBlameTest, SendBeforeACollectiveIsNotTakenForASkippedCollective) {
  // The same calls with the send before the all-gather in each step: rank 1 leaves out its 3rd
  // receive and waits in the all-gather; rank 0's send is where its history puts it.
  const Op gather{kGather, 64, OpType::kAllGather};
  Job job(2);
  job.ops(0, {send(1, kHalo), gather, send(1, kHalo), gather, send(1, kHalo)}, true);
  job.ops(1, {recv(0, kHalo), gather, recv(0, kHalo), gather, gather}, true);
  renumber(job, 2);
  const Verdict v = job.diagnose();
  EXPECT_NE(v.cls, VerdictClass::kSkippedCollective) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{1}) << v.headline;
}

TEST(P2pBlameTest, TwoStageTailThatSkippedAReceiveIsTheCulprit) {
  // The only link of the communicator: the side that posted fewer went on without the call.
  Job job(2);
  job.ops(0, {send(1), kLossOp, send(1), kLossOp, send(1)}, true);
  job.ops(1, {recv(0), kLossOp, recv(0), kLossOp, kLossOp}, true);
  renumber(job, 2);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kP2pMismatch) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{1});
  EXPECT_EQ(v.waiting, std::vector<int>{0});
  EXPECT_EQ(v.op, OpType::kRecv);
  EXPECT_EQ(shortFunctionName(v.site.function), "recvActivations");
}

TEST(P2pBlameTest, PairCarryingARingAndAPipelineIsJudgedByItsHistory) {
  // Two ranks, a pipeline 0 -> 1 and a ring on one communicator: the link 0 -> 1 carries both,
  // 1 -> 0 the ring only, so the other pair moved fewer by design. Rank 1 posts no receive of
  // the pipeline in step 2; only its count changed from the step before.
  Job job(2);
  job.ops(0,
          {send(1), kLossOp, send(1, kHalo), recv(1, kHalo), send(1), kLossOp, send(1, kHalo),
           recv(1, kHalo), send(1)},
          true);
  job.ops(1,
          {recv(0), kLossOp, send(0, kHalo), recv(0, kHalo), recv(0), kLossOp, send(0, kHalo),
           recv(0, kHalo), kLossOp},
          true);
  renumber(job, 2);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kP2pMismatch) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{1});
  EXPECT_EQ(v.op, OpType::kRecv);
  EXPECT_EQ(shortFunctionName(v.site.function), "recvActivations") << v.headline;
}

TEST(P2pBlameTest, CallSiteIsTheFunctionThatPairedWithTheWaitingCallBefore) {
  // Stage 0 sends activations then gradients to stage 1 each step, and skips the activation of
  // the last step: its last send is from sendGradients(), the missing one from sendActivations().
  Job job(2);
  job.ops(0,
          {send(1), send(1, kSendGrad), kLossOp, send(1), send(1, kSendGrad), kLossOp,
           send(1, kSendGrad), kLossOp},
          true);
  // Stage 1's 5th receive took the 5th send, the gradient: it waits in its 6th.
  job.ops(1, {recv(0), recv(0), kLossOp, recv(0), recv(0), kLossOp, recv(0), recv(0)}, true);
  renumber(job, 2);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.ranks, std::vector<int>{0}) << v.headline;
  EXPECT_EQ(shortFunctionName(v.site.function), "sendActivations") << v.headline;
}

TEST(P2pBlameTest, RingPeerThatSkippedAReceiveAndFinishedIsTheCulpritNotTheRemoteError) {
  // A ring of two: rank 0 posts no receive in the last step, ends the communicator and exits;
  // rank 1's send then fails with NCCL's remote error. The error is evidence, not the cause.
  Job job(2);
  const Op destroy{kTrain, 0, OpType::kCommDestroy};
  job.ops(
      0, {send(1, kHalo), recv(1, kHalo), send(1, kHalo), recv(1, kHalo), send(1, kHalo), destroy});
  job.ops(1, {send(0, kHalo), recv(0, kHalo), send(0, kHalo), recv(0, kHalo), recv(0, kHalo),
              send(0, kHalo)});
  renumber(job, 2);
  job.rank(0).exited = true;
  format::EventRecord& failed = job.rank(1).events.back();
  failed.state = EventState::kFailed;
  failed.result = 6;
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kP2pMismatch) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{0});
  EXPECT_EQ(v.waiting, std::vector<int>{1});
  EXPECT_EQ(v.op, OpType::kRecv);
  EXPECT_EQ(v.seq, 3u);
  EXPECT_EQ(shortFunctionName(v.site.function), "exchangeHalo");
}

TEST(P2pBlameTest, ReceiveBehindARankHeldInAMismatchedCollectiveIsNotTheVerdict) {
  // A pipeline 0 -> 1 -> 2 on one communicator, then an all-reduce of ranks 0 and 1 on another;
  // in step 2 rank 0 passes int32 for float32 there, so 0 and 1 hang in it, and stage 2 waits in
  // its 4th receive. The mismatch is the cause; stage 2's wait is its symptom.
  const auto pipe = [](Op o) {
    o.comm = kOtherComm;
    return o;
  };
  Op bad = kLossOp;
  bad.dtype = kInt32;
  Job job(3);
  job.ops(0, {pipe(send(1)), kLossOp, pipe(send(1)), kLossOp, pipe(send(1)), bad}, true);
  job.ops(1,
          {pipe(recv(0)), pipe(send(2)), kLossOp, pipe(recv(0)), pipe(send(2)), kLossOp,
           pipe(recv(0)), pipe(send(2)), kLossOp},
          true);
  job.ops(2, {pipe(recv(1)), pipe(recv(1)), pipe(recv(1)), pipe(recv(1))}, true);
  renumber(job, 3);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kDtypeMismatch) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{0});
}

TEST(P2pBlameTest, StalledRankSeenThroughAPeersSendIsStuckInHost) {
  // The tail stage sleeps in host code before step 2; stage 1's send to it has no receive.
  Job job(3);
  job.ops(0, {send(1), kLossOp, send(1), kLossOp, send(1), kLossOp}, true);
  job.ops(1, {recv(0), send(2), kLossOp, recv(0), send(2), kLossOp, recv(0), send(2)}, true);
  job.ops(2, {recv(1), kLossOp, recv(1), kLossOp});
  renumber(job, 3);
  Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankStuckInHost) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{2});
  EXPECT_EQ(shortFunctionName(v.site.function), "logLoss");
  EXPECT_EQ(v.waiting, (std::vector<int>{0, 1}));

  job.rank(2).fatal_signal = 9;  // killed instead
  v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankCrashed) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{2});

  job.rank(2).fatal_signal = 0;
  job.rank(2).exited = true;  // returned from main without ending the communicator
  v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankExited) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{2});
}

TEST(P2pBlameTest, HeadHeldInACollectiveWithTheStagesItStarvedIsTheCulprit) {
  // Faultgen seed 230: a pipeline 0 -> 1 -> 2 on the world communicator, then a broadcast of
  // ranks 0 and 2 on another. Stage 0 sends one activation of two in step 2 and goes on to the
  // broadcast, where it waits for stage 2; stage 2 waits for stage 1's send, stage 1 for stage
  // 0's. Stage 0's collective is held up by the chain it started, not by anything else.
  const auto expert = [](Op o) {
    o.comm = kOtherComm;
    return o;
  };
  const Op bcast = expert(Op{kGather, 64, OpType::kBroadcast});
  Job job(3);
  job.ops(0, {send(1), send(1), bcast, send(1), send(1), bcast, send(1), bcast}, true);
  job.ops(1,
          {recv(0), send(2), recv(0), send(2), recv(0), send(2), recv(0), send(2), recv(0), send(2),
           recv(0)},
          true);
  job.ops(2, {recv(1), recv(1), bcast, recv(1), recv(1), bcast, recv(1), recv(1)}, true);
  renumber(job, 3);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kP2pMismatch) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{0});
  EXPECT_EQ(v.waiting, (std::vector<int>{1, 2}));
  EXPECT_EQ(v.op, OpType::kSend);
  EXPECT_EQ(shortFunctionName(v.site.function), "sendActivations") << v.headline;
}

TEST(P2pBlameTest, PeerBlockedInAGroupWithACollectiveTheWaiterOwesIsTheCulprit) {
  // Faultgen seed 385: ranks 0 and 1 exchange halos on a pair communicator (B), then each step
  // ends in a group of two collectives: W on the world (ranks 0-2) and T on ranks 1-2. In step 2
  // rank 1 posts its send but no receive and enters the group, whose newest op T only waits for
  // rank 2 — but its W waits for rank 0, which waits in its unmatched send to rank 1.
  const uint64_t kThird = 0xdddd000000000003ull;
  const auto on = [](uint64_t comm, Op o) {
    o.comm = comm;
    return o;
  };
  const Op s = on(kOtherComm, send(1, kHalo)), r = on(kOtherComm, recv(1, kHalo));
  const Op s0 = on(kOtherComm, send(0, kHalo)), r0 = on(kOtherComm, recv(0, kHalo));
  const Op world{kTrain, 4}, third = on(kThird, Op{kLoss, 4});
  Job job(3);
  job.ops(0, {s, r, world, s, r}, true);
  job.rank(0).events[3].state = format::EventState::kEnqueued;  // the group's send waits too
  job.rank(0).events[3].setEndNs(0);
  job.ops(1, {s0, r0, world, third, s0, world, third}, true);
  job.rank(1).events[5].state = format::EventState::kEnqueued;  // the group waits as a whole
  job.rank(1).events[5].setEndNs(0);
  job.ops(2, {world, third, world, third}, true);
  job.rank(2).events[2].state = format::EventState::kEnqueued;
  job.rank(2).events[2].setEndNs(0);
  renumber(job, 3);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kP2pMismatch) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{1});
  EXPECT_EQ(v.op, OpType::kRecv);
  EXPECT_EQ(v.seq, 2u);
  EXPECT_EQ(shortFunctionName(v.site.function), "exchangeHalo") << v.headline;
}

TEST(P2pBlameTest, ReceiverThatFailedWhenAPeerWasKilledIsNotTheCulprit) {
  // Faultgen seed 334: each step rank 0 sends to rank 1 (A), then ranks 1 and 2 all-reduce on B.
  // Rank 2 is killed between steps; rank 1's all-reduce #3 fails (remote error) and it exits
  // without its 3rd receive; rank 0 waits in its 3rd send. The killed rank is the cause.
  const Op on_b = [] {
    Op o{kLoss, 4};
    o.comm = kOtherComm;
    return o;
  }();
  Job job(3);
  job.ops(0, {send(1), send(1), send(1)}, true);
  job.ops(1, {recv(0), on_b, recv(0), on_b, on_b});
  format::EventRecord& failed = job.rank(1).events.back();
  failed.state = format::EventState::kFailed;
  failed.result = 6;  // ncclRemoteError
  job.rank(1).exited = true;
  job.ops(2, {on_b, on_b});
  job.rank(2).fatal_signal = 9;
  renumber(job, 3);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankCrashed) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{2});
  ASSERT_FALSE(v.tables.empty());
  EXPECT_EQ(v.tables.back().title, "what followed");  // the unmatched send, as evidence
}

TEST(P2pBlameTest, RankThatLeftFirstIsFoundThroughRanksThatLeftOnItsAccount) {
  // Faultgen seed 10401: each step rank 0 sends to rank 1 (A), ranks 2 and 3 all-reduce on C,
  // ranks 1 and 2 on B. Rank 3 returns from main between steps; rank 2's all-reduce on C fails
  // (remote error) and it exits; rank 1's all-reduce on B, with rank 2, fails and it exits
  // without its 3rd receive; rank 0 waits in its 3rd send. No rank that left on its own held B:
  // the one rank 1 lost left because of rank 3, which is the cause.
  constexpr uint64_t kC = 0xcccc000000000001;
  const auto on = [](uint64_t comm) {
    Op o{kLoss, 4};
    o.comm = comm;
    return o;
  };
  const auto fail = [](RankData& r) {
    r.events.back().state = format::EventState::kFailed;
    r.events.back().result = 6;  // ncclRemoteError
    r.exited = true;
  };
  Job job(4);
  job.ops(0, {send(1), send(1), send(1)}, true);
  job.ops(1, {recv(0), on(kOtherComm), recv(0), on(kOtherComm), on(kOtherComm)});
  fail(job.rank(1));
  job.ops(2, {on(kC), on(kOtherComm), on(kC), on(kOtherComm), on(kC)});
  fail(job.rank(2));
  job.ops(3, {on(kC), on(kC)});
  job.rank(3).exited = true;
  renumber(job, 4);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankExited) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{3}) << v.headline;
  EXPECT_NE(v.headline.find("ranks 1-2 then failed"), std::string::npos) << v.headline;
}

TEST(P2pBlameTest, SenderThatFailedAGroupWhenAPeerExitedIsNotTheCulprit) {
  // Faultgen seed 814: each step rank 0 sends to rank 1 (A), then a group of an all-reduce on B
  // (ranks 0 and 2) and one on C (ranks 0 and 1). Rank 2 returns from main before its 3rd group;
  // rank 0's group fails (remote error) and it exits without its 3rd send; rank 1's all-reduce on
  // C completed, and it waits in its 3rd receive. The failed ncclGroupEnd names no communicator:
  // the calls of its group do, and B's lost the rank that exited.
  constexpr uint64_t kB = 0xbbbb000000000001, kC = 0xcccc000000000001;
  const auto on = [](uint64_t comm) {
    Op o{kLoss, 4};
    o.comm = comm;
    return o;
  };
  const Op start{kLoss, 0, OpType::kGroupStart}, end{kLoss, 0, OpType::kGroupEnd};
  const auto group = [&](uint64_t comm_a, uint64_t comm_b) {
    return std::vector<Op>{start, on(comm_a), on(comm_b), end};
  };
  Job job(3);
  job.ops(0, concat(concat(concat({send(1)}, group(kB, kC)), concat({send(1)}, group(kB, kC))),
                    group(kB, kC)));
  for (size_t i = job.rank(0).events.size() - 3; i < job.rank(0).events.size(); ++i) {
    job.rank(0).events[i].state = format::EventState::kFailed;
    job.rank(0).events[i].result = 6;  // ncclRemoteError
  }
  job.rank(0).exited = true;
  job.ops(1, concat(concat({recv(0), on(kC), recv(0), on(kC)}, {on(kC)}), {recv(0)}), true);
  job.ops(2, {on(kB), on(kB)});
  job.rank(2).exited = true;
  for (RankData& r : {std::ref(job.rank(0)), std::ref(job.rank(1)), std::ref(job.rank(2))}) {
    for (format::EventRecord& e : r.events) {
      if (e.op == OpType::kGroupStart || e.op == OpType::kGroupEnd) e.setCommId(0);
    }
  }
  renumber(job, 3);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankExited) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{2}) << v.headline;
}

TEST(P2pBlameTest, TwoStagePipelineJudgedAgainstTheSameStepOfTheLoop) {
  // Faultgen seed 261: two ranks, one communicator; each step a reduce, 2 activations 0 -> 1,
  // an all-reduce, then 4 gradients 0 -> 1. In step 2 stage 0 sends one activation and enters
  // the all-reduce. The step before the fault carried 4 gradients, not 2 activations: the
  // history must compare with the same part of the loop, where only the sender's count changed.
  const Op reduce{kLoss, 1024, OpType::kReduce};
  const Op allreduce{kTrain, 4};
  std::vector<Op> sender, receiver;
  for (int step = 0; step < 3; ++step) {
    sender.push_back(reduce);
    receiver.push_back(reduce);
    for (int mb = 0; mb < 2; ++mb) {
      if (step < 2 || mb == 0) sender.push_back(send(1));
      receiver.push_back(recv(0));
    }
    sender.push_back(allreduce);
    if (step == 2) break;
    receiver.push_back(allreduce);
    for (int mb = 0; mb < 4; ++mb) {
      sender.push_back(send(1, kSendGrad));
      receiver.push_back(recv(0, kSendGrad));
    }
  }
  Job job(2);
  job.ops(0, sender, true);
  job.ops(1, receiver, true);
  renumber(job, 2);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kP2pMismatch) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{0});
  EXPECT_EQ(v.waiting, std::vector<int>{1});
  EXPECT_EQ(v.op, OpType::kSend);
  EXPECT_EQ(shortFunctionName(v.site.function), "sendActivations") << v.headline;
}

}  // namespace
}  // namespace ncclrec::analyzer
