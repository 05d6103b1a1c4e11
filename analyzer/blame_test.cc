// Culprits vs. waiters (blame.h, cycle_blame.h, the p2p accounting of rules/p2p_mismatch.h): the
// verdict names the rank that deviated from its peers, and lists the ranks merely blocked by it as
// waiting.
#include "analyzer/blame.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/diagnose.h"
#include "analyzer/testing/job_builder.h"
#include "format/bbox_layout.h"

namespace ncclrec::analyzer {
namespace {

using namespace testing;  // Job, Op, the call sites (analyzer/testing/job_builder.h)

TEST(BlameTest, GatedCollectiveListsTheOthersAsWaiting) {
  Job job(4);
  job.ops(0, concat(repeat({kTrain}, 6), {{kSave, 1}}), true);
  for (int r = 1; r < 4; ++r) job.ops(r, repeat({kTrain}, 7), true);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankGatedCollective) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{0});
  EXPECT_EQ(v.waiting, (std::vector<int>{1, 2, 3}));
  // The headline says both: who deviated, and who waits for it where.
  EXPECT_TRUE(v.headline.ends_with("; ranks 1-3 wait for it in #7 from trainStep() train.cc:27"))
      << v.headline;
}

TEST(BlameTest, RanksThatFailedBecauseTheCulpritLeftAreWaiting) {
  // Rank 2 exited after 3 all-reduces; ranks 0-1 failed in their 4th (remote error) and exited.
  Job job(3);
  job.ops(0, repeat({kTrain}, 4)).ops(1, repeat({kTrain}, 4)).ops(2, repeat({kTrain}, 3));
  for (int r = 0; r < 2; ++r) {
    job.rank(r).events.back().state = EventState::kFailed;
    job.rank(r).events.back().result = 6;  // ncclRemoteError
    job.rank(r).exited = true;
  }
  job.rank(2).exited = true;
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankExited) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{2});
  EXPECT_EQ(v.waiting, (std::vector<int>{0, 1}));
}

TEST(BlameTest, NothingWaitsWhenThereIsNoHang) {
  Job job(2);
  job.ops(0, repeat({kTrain}, 3)).ops(1, repeat({kTrain}, 3));
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kNoHang);
  EXPECT_TRUE(v.waiting.empty());
}

TEST(BlameTest, CycleOfTwoRanksWithNoPeersStaysADeadlockAndNamesItsBystanders) {
  // samples/cross_comm_deadlock: A and B hold ranks 0 and 1 only; rank 0 issues A#2, rank 1 B#2.
  // Nothing tells which of the two swapped. Ranks 2-3 wait for them on a third communicator C.
  const uint64_t kThird = 0xdddd000000000003ull;
  Op on_a{kTrain};
  on_a.comm = kComm;
  Op on_c{kLoss, 1};
  on_c.comm = kThird;
  Job job(4);
  job.ops(0, {on_c, on_a, pairOp(kPair), on_a}, true)
      .ops(1, {on_c, on_a, pairOp(kPair), pairOp(kPair)}, true);
  job.ops(2, {on_c, on_c}, true).ops(3, {on_c, on_c}, true);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kCrossCommDeadlock) << v.headline;
  EXPECT_EQ(v.ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(v.waiting, (std::vector<int>{2, 3}));
  EXPECT_TRUE(v.headline.ends_with(
      "for rank 0; ranks 2-3 wait for them in ncclAllReduce #2 on comm dddd0000 from logLoss() "
      "train.cc:40"))
      << v.headline;
}

TEST(BlameTest, CycleOfTwoGroupsThatOrderTwoCommunicatorsDifferentlyIsADeadlock) {
  // Both communicators hold ranks 0-3; ranks 0-1 issue A#2 first, ranks 2-3 B#2 first: two sides
  // of two ranks each, no rank differs from the others of its side.
  Job job(4);
  for (int r = 0; r < 2; ++r) job.ops(r, {{kTrain}, pairOp(kPair), {kTrain}}, true);
  for (int r = 2; r < 4; ++r) job.ops(r, {{kTrain}, pairOp(kPair), pairOp(kPair)}, true);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kCrossCommDeadlock) << v.headline;
  EXPECT_EQ(v.ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_TRUE(v.waiting.empty());
}

TEST(BlameTest, RankThatSkippedAWorldOpIntoAPairOpIsTheCulpritNotItsPartner) {
  // Issue 14, pattern 1: world communicator A (ranks 0-3) and pair communicator B (ranks 0-1).
  // Rank 1 skips A#2 and enters B#2, where rank 0 never arrives: rank 0 waits for it in A#2, as do
  // ranks 2-3. The cycle 0 <-> 1 is the evidence; rank 1 alone differs from its peers on A.
  Job job(4);
  job.ops(0, {{kTrain}, pairOp(kPair), {kTrain}}, true)
      .ops(1, {{kTrain}, pairOp(kPair), pairOp(kPair)}, true);
  job.ops(2, repeat({kTrain}, 2), true).ops(3, repeat({kTrain}, 2), true);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kSkippedCollective) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{1});
  EXPECT_EQ(v.waiting, (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(v.comm_id, kComm);
  EXPECT_EQ(v.seq, 2u);
  EXPECT_EQ(shortFunctionName(v.site.function), "trainStep");
  EXPECT_EQ(v.headline,
            "rank 1 skipped ncclAllReduce #2 on comm c0ffee00 from trainStep() train.cc:27 that "
            "ranks 0,2-3 issued, or put it off: it waits in ncclAllReduce #2 on comm beef0000 from "
            "pairReduce() train.cc:52 for rank 0, which waits for it on comm c0ffee00; ranks 0,2-3 "
            "wait for it in #2 from trainStep() train.cc:27");
  ASSERT_EQ(v.tables.size(), 1u);
  EXPECT_EQ(v.tables[0].title, "wait cycle");
}

TEST(BlameTest, RankThatInsertedAnOpOnThePairCommunicatorIsGated) {
  // As above, but rank 1 issues an op new to B (pairHandshake) before A#2.
  Job job(4);
  job.ops(0, {{kTrain}, pairOp(kPair), {kTrain}}, true);
  job.ops(1, {{kTrain}, pairOp(kPair), pairOp(kHandshake)}, true);
  job.ops(2, repeat({kTrain}, 2), true).ops(3, repeat({kTrain}, 2), true);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankGatedCollective) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{1});
  EXPECT_EQ(v.waiting, (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(v.comm_id, kOtherComm);
  EXPECT_EQ(shortFunctionName(v.site.function), "pairHandshake");
  EXPECT_NE(v.headline.find("rank 1 alone issued ncclAllReduce #2 on comm beef0000 from "
                            "pairHandshake() train.cc:57 before ncclAllReduce #2 on comm c0ffee00"),
            std::string::npos)
      << v.headline;
}

// Steps of A (kComm) then B (kOtherComm, ranks 0-1 only), `steps` times, then `tail`.
std::vector<Op> pairSteps(int steps, const std::vector<Op>& tail) {
  std::vector<Op> ops;
  for (int i = 0; i < steps; ++i) ops.insert(ops.end(), {{kTrain}, pairOp(kPair)});
  return concat(ops, tail);
}

TEST(BlameTest, RankThatLeftOutAStepOfItsOwnHistoryBreaksACycleOfTwo) {
  // faultgen seed 726: both communicators hold ranks 0-1 only, so no third rank agrees on either
  // op. Three steps did A then B; at the fourth rank 1 skips A and enters B#4. Its own history
  // put A before every B; rank 0's history holds B before its A#4 as always.
  Job job(2);
  job.ops(0, pairSteps(3, {{kTrain}}), true).ops(1, pairSteps(3, {pairOp(kPair)}), true);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kSkippedCollective) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{1});
  EXPECT_EQ(v.waiting, std::vector<int>{0});
  EXPECT_EQ(v.comm_id, kComm);
  EXPECT_EQ(v.seq, 4u);
  EXPECT_EQ(shortFunctionName(v.site.function), "trainStep");
}

TEST(BlameTest, OneStepOfHistoryDoesNotTellASkipFromASwap) {
  // One step of A then B, then rank 0 issues A#2 and rank 1 B#2: as in the sample, nothing tells
  // which of the two swapped; with a second step of history the same order would.
  Job job(2);
  job.ops(0, pairSteps(1, {{kTrain}}), true).ops(1, pairSteps(1, {pairOp(kPair)}), true);
  EXPECT_EQ(job.diagnose().cls, VerdictClass::kCrossCommDeadlock);
}

TEST(BlameTest, RankBehindElsewhereOnlyBecauseItWaitsIsNotTheDeviant) {
  // faultgen seed 868: each step issues B (kOtherComm: ranks 0-2, a broadcast whose non-root
  // ranks go on) then A (kComm: ranks 0-3). At the third step rank 1 skips B#3 and enters A#3;
  // rank 2 went past B#3. Both cycle members are alone behind their communicator's others —
  // rank 1 on B, rank 0 on A — but only rank 1 left a step of its own history out.
  const std::vector<Op> step = {pairOp(kPair), {kTrain}};
  const std::vector<Op> two_steps = concat(step, step);
  Job job(4);
  job.ops(0, concat(two_steps, {pairOp(kPair)}), true);
  job.ops(1, concat(two_steps, {{kTrain}}), true);
  job.ops(2, concat(concat(two_steps, step), {}), true);
  job.ops(3, repeat({kTrain}, 3), true);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kSkippedCollective) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{1});
  EXPECT_EQ(v.comm_id, kOtherComm);
  EXPECT_EQ(v.seq, 3u);
  EXPECT_NE(v.headline.find("that ranks 0,2 issued"), std::string::npos) << v.headline;
}

TEST(BlameTest, RankBlockedInAnOpNewToItsCommunicatorBreaksTheCycle) {
  // faultgen seed 652: rank 1 inserts an op no rank ever issued on B (pairHandshake) where its
  // step issues A; with only two members nothing agrees against it, and its own history has no
  // such op — but it is the only member of the cycle blocked outside the program's known steps.
  Job job(2);
  job.ops(0, pairSteps(2, {{kTrain}}), true);
  job.ops(1, pairSteps(2, {pairOp(kHandshake)}), true);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankGatedCollective) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{1});
  EXPECT_EQ(shortFunctionName(v.site.function), "pairHandshake");
}

TEST(BlameTest, RankThatSkippedACollectiveIntoItsRingExchangeIsTheCulprit) {
  // faultgen seed 760: each step all-reduces on A (ranks 0-2), then ranks 1 and 2 exchange halos
  // on B (a send and a receive each, grouped). In step 3 rank 1 skips A#3 and posts its exchange:
  // its send waits for rank 2, which waits for it in A#3 with rank 0. A cycle through a send: rank
  // 1's own history put A before every exchange; rank 2's holds the exchange before its A#3.
  const Site halo{"exchangeHalo(ncclComm*, float*)", 82};
  const auto p2p = [&](OpType op, int peer) {
    Op o{halo, 256, op};
    o.root = peer;
    o.comm = kOtherComm;
    return o;
  };
  const std::vector<Op> step1 = {{kTrain}, p2p(OpType::kSend, 2), p2p(OpType::kRecv, 2)};
  const std::vector<Op> step2 = {{kTrain}, p2p(OpType::kSend, 1), p2p(OpType::kRecv, 1)};
  Job job(3);
  job.ops(0, repeat({kTrain}, 3), true);
  job.ops(1, concat(concat(step1, step1), {p2p(OpType::kSend, 2), p2p(OpType::kRecv, 2)}), true);
  job.rank(1).events[6].state = EventState::kEnqueued;  // the group waits as a whole
  job.rank(1).events[6].setEndNs(0);
  job.ops(2, concat(concat(step2, step2), {{kTrain}}), true);
  for (int r = 0; r < 3; ++r) numberLikeNccl(job.rank(r));
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kSkippedCollective) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{1});
  EXPECT_EQ(v.waiting, (std::vector<int>{0, 2}));
  EXPECT_EQ(v.comm_id, kComm);
  EXPECT_EQ(v.seq, 3u);
  EXPECT_EQ(shortFunctionName(v.site.function), "trainStep");
  EXPECT_NE(v.headline.find("that ranks 0,2 issued, or put it off: it waits in ncclSend #3 on "
                            "comm beef0000 from exchangeHalo() train.cc:82 for rank 2"),
            std::string::npos)
      << v.headline;
}

TEST(BlameTest, PipelineStageThatReceivedMoreThanItSentIsTheCulprit) {
  // Issue 14, pattern 2: stage 1 receives 3 activations from stage 0 but sends 2 to stage 2, then
  // goes on to the loss all-reduce; stage 2 waits in its 3rd receive. The receiver is waiting.
  const auto p2p = [](OpType op, int peer, const Site& site) {
    Op o{site, 256, op};
    o.root = peer;
    return o;
  };
  const Site send{"sendActivations(ncclComm*, std::vector<float>&, int)", 70};
  const Site recv{"recvActivations(ncclComm*, std::vector<float>&, int)", 74};
  const Op loss{kLoss, 1};
  Job job(3);
  job.ops(
      0,
      {p2p(OpType::kSend, 1, send), p2p(OpType::kSend, 1, send), p2p(OpType::kSend, 1, send), loss},
      true);
  job.ops(1,
          {p2p(OpType::kRecv, 0, recv), p2p(OpType::kSend, 2, send), p2p(OpType::kRecv, 0, recv),
           p2p(OpType::kSend, 2, send), p2p(OpType::kRecv, 0, recv), loss},
          true);
  job.ops(2, repeat(p2p(OpType::kRecv, 1, recv), 3), true);
  for (int r = 0; r < 3; ++r) numberLikeNccl(job.rank(r));
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kP2pMismatch) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{1});
  EXPECT_EQ(v.waiting, (std::vector<int>{0, 2}));
  EXPECT_EQ(v.op, OpType::kSend);
  EXPECT_EQ(v.seq, 3u);
  EXPECT_EQ(shortFunctionName(v.site.function), "sendActivations");
  EXPECT_EQ(v.headline,
            "rank 1 completed 3 ncclRecvs from rank 0 but posted 2 ncclSends to rank 2 on comm "
            "c0ffee00 (the last, #2, from sendActivations() train.cc:70); rank 0 waits for it in "
            "ncclAllReduce #1 from logLoss() train.cc:40, rank 2 in ncclRecv #3 from "
            "recvActivations() train.cc:74");
  ASSERT_EQ(v.tables.size(), 1u);
  EXPECT_EQ(v.tables[0].title, "sends and receives between ranks 1 and 2 on comm c0ffee00");
}

TEST(BlameTest, RelayThatDroppedASendIsNamedAtTheRoleItDroppedNotItsLastSend) {
  // Faultgen seed 10064: each step the ring's ranks exchange halos, then caches, with their
  // neighbours. In step 2 rank 1 leaves out its cache send to rank 2 and goes on to the loss
  // all-reduce; rank 2 waits in its 6th receive, from exchangeKvCache(). Rank 1's last send was a
  // halo: the dropped one is of the role whose sends paired with rank 2's cache receives.
  const Site halo_send{"exchangeHalo(ncclComm*)", 31}, halo_recv{"exchangeHalo(ncclComm*)", 33},
      kv_send{"exchangeKvCache(ncclComm*)", 41}, kv_recv{"exchangeKvCache(ncclComm*)", 43};
  const auto p2p = [](const Site& site, OpType op, int peer) {
    Op o{site, 16, op};
    o.root = peer;
    return o;
  };
  Job job(3);
  for (int r = 0; r < 3; ++r) {
    const int next = (r + 1) % 3, prev = (r + 2) % 3;
    const std::vector<Op> halos = {p2p(halo_send, OpType::kSend, next),
                                   p2p(halo_recv, OpType::kRecv, prev)};
    const std::vector<Op> caches = {p2p(kv_send, OpType::kSend, next),
                                    p2p(kv_recv, OpType::kRecv, prev)};
    const std::vector<Op> step = concat(halos, caches);
    std::vector<Op> calls = concat(concat(step, step), halos);
    calls = concat(calls, r == 1 ? std::vector<Op>{caches[1]} : caches);
    if (r != 2) calls.push_back(Op{kLoss, 1});
    job.ops(r, calls, true);
    numberLikeNccl(job.rank(r));
  }
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kP2pMismatch) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{1}) << v.headline;
  EXPECT_EQ(v.op, OpType::kSend);
  EXPECT_EQ(v.seq, 6u);
  EXPECT_EQ(v.site.line, 41) << v.headline;
  EXPECT_NE(v.headline.find("posted 5 ncclSends to rank 2 on comm c0ffee00 (those for "
                            "exchangeKvCache() train.cc:43 from exchangeKvCache() train.cc:41)"),
            std::string::npos)
      << v.headline;
}

TEST(BlameTest, ReceiverBehindABlockedRelayIsNotTheCulprit) {
  // Stage 2 of 4 drops a send to stage 3; stage 3's receive from stage 2 is then unmatched, and so
  // is stage 4's from stage 3 (stage 3 is blocked in its own receive): the first is the cause.
  const auto p2p = [](OpType op, int peer) {
    Op o{{"pipe(ncclComm*)", 80}, 256, op};
    o.root = peer;
    return o;
  };
  Job job(4);
  job.ops(0, {p2p(OpType::kSend, 1), p2p(OpType::kSend, 1), {kLoss, 1}}, true);
  job.ops(1, {p2p(OpType::kRecv, 0), p2p(OpType::kSend, 2), p2p(OpType::kRecv, 0), {kLoss, 1}},
          true);
  job.ops(2, {p2p(OpType::kRecv, 1), p2p(OpType::kSend, 3), p2p(OpType::kRecv, 1)}, true);
  job.ops(3, {p2p(OpType::kRecv, 2), p2p(OpType::kRecv, 2)}, true);
  // Stage 3's wait is the older one: it is looked at first and found to be a symptom.
  job.rank(3).events.back().setEnqueueNs(kT0);
  for (int r = 0; r < 4; ++r) numberLikeNccl(job.rank(r));
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kP2pMismatch) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{1});
  EXPECT_EQ(v.waiting, (std::vector<int>{0, 2, 3}));
}

TEST(BlameTest, CollectiveNewToItsCommunicatorIssuedBeforeTheStepsSendsIsGated) {
  // Faultgen seeds 1834 and 898: each step rank 0 sends 2 activations to rank 1; in step 2 it
  // first issues an all-reduce on a communicator no rank used before, where rank 1 never comes:
  // rank 0 waits there for rank 1, which waits in its 5th receive for rank 0. A cycle through a
  // receive: the member blocked in an op new to its communicator, while the other waits in a call
  // its history knows, inserted it.
  const auto p2p = [](OpType op, int peer) {
    Op o{{"sendActivations(ncclComm*)", 80}, 256, op};
    if (op == OpType::kRecv) o.site = {"recvActivations(ncclComm*)", 84};
    o.root = peer;
    return o;
  };
  const Site debug{"dumpDebugStats(ncclComm*)", 90};
  Job job(2);
  const Op send = p2p(OpType::kSend, 1), recv = p2p(OpType::kRecv, 0);
  job.ops(0, {send, send, send, send, pairOp(debug)}, true);
  job.ops(1, {recv, recv, recv, recv, recv}, true);
  for (int r = 0; r < 2; ++r) {
    numberLikeNccl(job.rank(r));
    job.created(r, kOtherComm, 2);  // both created it
  }
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankGatedCollective) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{0}) << v.headline;
  EXPECT_EQ(v.waiting, std::vector<int>{1});
  EXPECT_EQ(shortFunctionName(v.site.function), "dumpDebugStats");
}

TEST(BlameTest, FirstCollectiveOnACommunicatorOfSendsAndReceivesIsGatedNotTheShortfallItCauses) {
  // Faultgen seed 10127: each step the three ranks exchange halos around a ring on the world
  // (which carries nothing else) in a group, and ranks 0 and 1 all-reduce and exchange caches in a
  // group on a pair communicator. In step 2 rank 0 issues a debug all-reduce on the world after
  // the halos: the world's first collective, which ranks 1 and 2, waiting in sends and receives,
  // never issue. Rank 0's posts then fall short on the pair: a symptom of the collective it alone
  // issued. (When most members issued the first collective, the few blocked in sends and
  // receives are held by something else: PipelineStageThatReceivedMoreThanItSentIsTheCulprit.)
  const Site halo{"exchangeHalo(ncclComm*)", 30}, kv{"exchangeKvCache(ncclComm*)", 31},
      debug{"dumpDebugStats(ncclComm*)", 21};
  constexpr uint64_t kSolo = 0x5010000000000003ull;  // rank 2's own communicator
  const auto p2p = [&](const Site& site, uint64_t comm, OpType op, int peer) {
    Op o{site, 4, op};
    o.comm = comm;
    o.root = peer;
    return o;
  };
  const auto on = [](Op o, uint64_t comm) {
    o.comm = comm;
    return o;
  };
  Job job(3);
  for (int r = 0; r < 3; ++r) {
    const std::vector<Op> halos = {p2p(halo, kComm, OpType::kSend, (r + 1) % 3),
                                   p2p(halo, kComm, OpType::kRecv, (r + 2) % 3)};
    const std::vector<Op> caches = {p2p(kv, kOtherComm, OpType::kSend, 1 - r),
                                    p2p(kv, kOtherComm, OpType::kRecv, 1 - r)};
    const Op train = on(Op{kTrain}, r == 2 ? kSolo : kOtherComm);
    const std::vector<Op> step =
        concat(concat({train}, halos), r == 2 ? std::vector<Op>{} : caches);
    std::vector<Op> calls = concat(concat(concat(step, step), {train}), halos);
    if (r == 0) calls.push_back(on(Op{debug, 1}, kComm));
    if (r == 1) calls = concat(calls, caches);
    if (r == 2) calls = concat(concat(calls, {train}), halos);
    job.ops(r, calls, true);
    numberLikeNccl(job.rank(r));
    for (EventRecord& e : job.rank(r).events) {
      if (format::isP2p(e.op)) e.flags |= format::kEventInGroup;
    }
    if (r != 0) job.pendingToo(r, 1);  // in its last group: the send as well
  }
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankGatedCollective) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{0}) << v.headline;
  EXPECT_EQ(v.waiting, (std::vector<int>{1, 2}));
  EXPECT_EQ(v.comm_id, kComm);
  EXPECT_EQ(shortFunctionName(v.site.function), "dumpDebugStats");
  EXPECT_NE(v.headline.find("ranks 1-2 issued no collective there"), std::string::npos)
      << v.headline;
}

TEST(BlameTest, LoneFirstCollectiveHoldingTheRankThatFellShortIsGatedInATie) {
  // Faultgen seed 10538: ranks 0 and 1 exchange caches in a group on a pair communicator each
  // step. In step 3 rank 0 first issues a debug all-reduce on a second pair communicator, which
  // rank 1 created but never uses: rank 1 waits in its 3rd group for rank 0, whose posts fall
  // short. One issuer against one member blocked elsewhere; the issuer is the rank the p2p
  // accounting names: it fell short because the collective holds it.
  const Site kv{"exchangeKvCache(ncclComm*)", 31}, debug{"evalBarrier(ncclComm*)", 21};
  const auto p2p = [&](OpType op, int peer) {
    Op o{kv, 1024, op};
    o.root = peer;
    return o;
  };
  Job job(2);
  for (int r = 0; r < 2; ++r) {
    const std::vector<Op> step = {p2p(OpType::kSend, 1 - r), p2p(OpType::kRecv, 1 - r)};
    std::vector<Op> calls = concat(step, step);
    calls = r == 0 ? concat(calls, {pairOp(debug)}) : concat(calls, step);
    job.ops(r, calls, true);
    numberLikeNccl(job.rank(r));
    for (EventRecord& e : job.rank(r).events) {
      if (format::isP2p(e.op)) e.flags |= format::kEventInGroup;
    }
  }
  job.pendingToo(1, 1);           // in its last group: the send as well
  job.created(1, kOtherComm, 2);  // never used
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankGatedCollective) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{0}) << v.headline;
  EXPECT_EQ(v.comm_id, kOtherComm);
  EXPECT_EQ(shortFunctionName(v.site.function), "evalBarrier");
}

TEST(BlameTest, LoneFirstCollectiveOfARankBlockedElsewhereIsGated) {
  // Faultgen seed 10532: each step ranks 0 and 2 exchange halos in a group on their pair
  // communicator, then ranks 1 and 2 reduce and all-gather in a group on theirs. In step 3 rank 1
  // first issues a debug all-reduce on the world, which all three created and no rank used: rank 2
  // waits for it in the pair's reduce #5, rank 0 for rank 2 in its 4th halo exchange. Rank 1 is
  // blocked elsewhere, in a collective it alone issued, where the others, each blocked in an NCCL
  // call, issued none.
  constexpr uint64_t kHalo = 0x4a10000000000003ull;
  const Site halo{"exchangeHalo(ncclComm*)", 31}, ema{"syncEmaWeights(ncclComm*)", 25},
      debug{"evalBarrier(ncclComm*)", 21};
  const auto p2p = [&](OpType op, int peer) {
    Op o{halo, 4, op};
    o.comm = kHalo;
    o.root = peer;
    return o;
  };
  Op reduce{ema, 1024, OpType::kReduce}, gather{ema, 1024, OpType::kAllGather}, barrier{debug, 1};
  reduce.root = 1;
  barrier.comm = kOtherComm;
  const std::vector<Op> exchange0 = {p2p(OpType::kSend, 2), p2p(OpType::kRecv, 2)};
  const std::vector<Op> exchange2 = {p2p(OpType::kSend, 0), p2p(OpType::kRecv, 0)};
  const std::vector<Op> sync = {reduce, gather};
  Job job(3);
  job.ops(0, concat(concat(concat(exchange0, exchange0), exchange0), exchange0), true);
  job.ops(1, concat(concat(sync, sync), {barrier}), true);
  std::vector<Op> calls2;
  for (int step = 0; step < 3; ++step) calls2 = concat(concat(calls2, exchange2), sync);
  job.ops(2, calls2, true);
  for (int r = 0; r < 3; ++r) {
    numberLikeNccl(job.rank(r));
    for (EventRecord& e : job.rank(r).events) e.flags |= format::kEventInGroup;
    job.created(r, kOtherComm, 3);  // every rank created it
  }
  for (int r : {0, 2}) job.pendingToo(r, 1);  // in its last group: the first call as well
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankGatedCollective) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{1}) << v.headline;
  EXPECT_EQ(v.comm_id, kOtherComm);
  EXPECT_EQ(shortFunctionName(v.site.function), "evalBarrier");
  EXPECT_NE(v.headline.find("ranks 0,2 issued no collective there"), std::string::npos)
      << v.headline;
}

TEST(BlameTest, RankThatSkippedAGroupedCollectiveIsNamedNotThePartnerItHoldsBehind) {
  // Faultgen seed 1067: each step ranks 0 and 2 group an all-reduce and a broadcast on a pair
  // communicator, then all four reduce on the world. In step 2 rank 2 leaves the broadcast out of
  // its group: the all-reduce completes on it and it goes on to the world reduce; rank 0 waits in
  // its group for the broadcast, so it is alone behind on the world.
  const Site merge{"mergeExpertOutputs(ncclComm*)", 60},
      epoch{"syncDataloaderEpoch(ncclComm*)", 70};
  Op reduce{merge, 16}, bcast{merge, 256, OpType::kBroadcast}, world{epoch, 4, OpType::kReduce};
  reduce.comm = bcast.comm = kOtherComm;
  bcast.root = 1;
  world.root = 3;
  Job job(4);
  const std::vector<Op> step = {reduce, bcast, world};
  job.ops(0, concat(concat(step, step), {reduce, bcast}), true);
  job.rank(0).events[job.rank(0).events.size() - 2].state = EventState::kEnqueued;
  job.ops(2, concat(concat(step, step), {reduce, world}), true);
  for (int r : {1, 3}) job.ops(r, repeat(world, 3), true);
  for (int r = 0; r < 4; ++r) numberLikeNccl(job.rank(r));
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kSkippedCollective) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{2}) << v.headline;
  EXPECT_EQ(v.op, OpType::kBroadcast) << v.headline;
  EXPECT_EQ(v.comm_id, kOtherComm);
  EXPECT_EQ(shortFunctionName(v.site.function), "mergeExpertOutputs");
}

}  // namespace
}  // namespace ncclrec::analyzer
