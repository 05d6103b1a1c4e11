// The headlines of headlines_outcomes.h and headlines_where.h: no hang, a slow rank, a failed
// call, every rank in one op; where the waiting ranks are and where a culprit is now, in words.
#include "analyzer/headlines_outcomes.h"

#include <gtest/gtest.h>

#include "analyzer/headlines_where.h"
#include "analyzer/testing/call_site.h"

namespace ncclrec::analyzer {
namespace {

using format::OpType;

constexpr uint64_t kWorld = 0xc0ffee0000000001ull;
constexpr uint64_t kPair = 0xbeef000000000002ull;

using testing::trainAt;

Verdict verdict(std::vector<int> ranks, std::vector<int> waiting, OpType op, uint64_t seq,
                uint64_t comm, CallSite site = {}) {
  Verdict v;
  v.ranks = std::move(ranks);
  v.waiting = std::move(waiting);
  v.op = op;
  v.seq = seq;
  v.comm_id = comm;
  v.site = std::move(site);
  return v;
}

TEST(OutcomeHeadlinesTest, NoHangCountsWhatCompleted) {
  EXPECT_EQ(noHangHeadline({16, 1, 4}),
            "no hang: every recorded collective completed (16 ops on 1 communicator across 4 "
            "ranks)");
  EXPECT_EQ(noHangHeadline({30, 2, 8}),
            "no hang: every recorded collective completed (30 ops on 2 communicators across 8 "
            "ranks)");
}

TEST(OutcomeHeadlinesTest, ASlowRankSaysItsShareAndTheWaitingItCost) {
  const Verdict v = verdict({2}, {}, OpType::kAllReduce, 0, kWorld);
  EXPECT_EQ(slowRankHeadline(v, {30, 40, 1.2e9, 1.5e9, 3e9}),
            "no hang, but rank 2 was the last to issue 30 of 40 collectives (75%) on comm "
            "c0ffee00: the others wait for it (1.20 s, 80% of all their waiting, 40% of 3.00 s)");
  EXPECT_EQ(slowRankHeadline(v, {7, 8, 0, 0, 0}),
            "no hang, but rank 2 was the last to issue 7 of 8 collectives (88%) on comm "
            "c0ffee00: the others wait for it");
}

TEST(OutcomeHeadlinesTest, AFailedCallNamesItsCallAndError) {
  EXPECT_EQ(failedCallHeadline(
                verdict({2}, {}, OpType::kAllReduce, 3, kWorld, trainAt("trainStep", 40)), 6),
            "rank 2: ncclAllReduce #3 on comm c0ffee00 from trainStep() train.cc:40 returned "
            "NCCL error 6");
  EXPECT_EQ(
      failedCallHeadline(verdict({2}, {}, OpType::kCommInitRank, 0, 0, trainAt("init", 9)), 3),
      "rank 2: ncclCommInitRank from init() train.cc:9 returned NCCL error 3");
}

TEST(OutcomeHeadlinesTest, EveryRankInOneOpSaysWhoHasNoData) {
  const Verdict v = verdict({}, {}, OpType::kAllReduce, 6, kWorld);
  EXPECT_EQ(allWaitHeadline(v, {0, 1, 2, 3}, {}),
            "ranks 0-3 wait in ncclAllReduce #6 on comm c0ffee00 and agree on every op before it");
  EXPECT_EQ(allWaitMissing({}),
            "every rank waits in the same op: the transport or the device is stuck, not the "
            "program's order; the NCCL log (NCCL_DEBUG=INFO) would tell more");
  EXPECT_EQ(allWaitHeadline(v, {0}, {1, 2}),
            "rank 0 waits in ncclAllReduce #6 on comm c0ffee00 and agree on every op before it; "
            "no data for ranks 1-2");
  EXPECT_EQ(allWaitMissing({1, 2}),
            "no data for ranks 1-2: their black boxes or dumps would show where they are");
}

TEST(WhereHeadlinesTest, TheWaitersAreToldByPlace) {
  Verdict v = verdict({3}, {0, 1, 2}, OpType::kAllReduce, 6, kWorld);
  EXPECT_EQ(waitingPhrase(v, {}), "; ranks 0-2 wait for it");
  const WaitPlace here{{0, 1}, kWorld, 6, OpType::kAllReduce, false, trainAt("trainStep", 40)};
  const WaitPlace there{{2}, kPair, 2, OpType::kBroadcast, false, trainAt("syncMetrics", 70)};
  EXPECT_EQ(waitingPhrase(v, {here, there}),
            "; ranks 0-1 wait for it in #6 from trainStep() train.cc:40, rank 2 in ncclBroadcast "
            "#2 on comm beef0000 from syncMetrics() train.cc:70");
  WaitPlace failed = there;
  failed.failed = true;
  failed.comm_id = kWorld;
  v.ranks = {3, 4};
  EXPECT_EQ(waitingPhrase(v, {failed, here}),
            "; rank 2 failed in ncclBroadcast #2 from syncMetrics() train.cc:70, ranks 0-1 in #6 "
            "from trainStep() train.cc:40");
  const WaitPlace creating{{1}, kPair, 0, OpType::kCommInitRank, false, trainAt("init", 9)};
  v.waiting = {1};
  EXPECT_EQ(waitingPhrase(v, {creating}),
            "; rank 1 waits for them in ncclCommInitRank on comm beef0000 from init() train.cc:9");
  v.waiting.clear();
  EXPECT_EQ(waitingPhrase(v, {here}), "");
}

TEST(WhereHeadlinesTest, ACulpritIsToldWhereItIsNow) {
  RankNow n;
  n.rank = 3;
  n.thread = "main thread 4242, sleeping in read";
  EXPECT_EQ(nowPhrase(n),
            "; rank 3 is now at an unknown place (main thread 4242, sleeping in read)");
  n.where = trainAt("saveCheckpoint", 57);
  n.since_last_call_ns = 2'049'000'000;
  EXPECT_EQ(nowPhrase(n),
            "; rank 3 is now in saveCheckpoint() train.cc:57 (main thread 4242, sleeping in read), "
            "2.0 s after its last NCCL call");
}

}  // namespace
}  // namespace ncclrec::analyzer
