// Root cause across communicators and time (root_cause.cc): an earlier divergence by the same
// ranks on another communicator is the verdict; the later stop is its evidence.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analyzer/diagnose.h"
#include "analyzer/testing/job_builder.h"

namespace ncclrec::analyzer {
namespace {

using namespace testing;  // Job, Op, the call sites (analyzer/testing/job_builder.h)

// Each rank's ops at the given seconds after kT0 (steps 10 s apart), so that times compare across
// ranks.
void at(Job& job, int rank, const std::vector<int64_t>& seconds) {
  auto& events = job.rank(rank).events;
  for (size_t i = 0; i < events.size() && i < seconds.size(); ++i) {
    events[i].setEnqueueNs(kT0 + seconds[i] * kSec);
    if (events[i].endNs() != 0) events[i].setEndNs(events[i].enqueueNs() + 1000);
  }
}

TEST(RootCauseTest, ExtraOpOnAPairCommunicatorExplainsALaterExit) {
  // Issue 14, pattern 3, as on a GPU: world A (ranks 0-3), pair B (ranks 2-3). At step 1 rank 3
  // adds pairHandshake() on B; it pairs with rank 2's pairReduce() and completes, so rank 3 stays
  // one op ahead on B. Its last pairReduce() fails (rank 2 never issues a 4th) and it exits; ranks
  // 0-2 wait for it in A#4. Without the earlier cause this reads "rank 3 exited after 3
  // all-reduces from trainStep()".
  Job job(4);
  for (int r = 0; r < 2; ++r) {
    job.ops(r, repeat({kTrain}, 4), true);
    at(job, r, {0, 10, 20, 30});
  }
  job.ops(2, {{kTrain}, pairOp(kPair), {kTrain}, pairOp(kPair), {kTrain}, pairOp(kPair), {kTrain}},
          true);
  at(job, 2, {0, 1, 10, 11, 20, 21, 30});
  job.ops(3, {{kTrain},
              pairOp(kPair),
              {kTrain},
              pairOp(kHandshake),
              pairOp(kPair),
              {kTrain},
              pairOp(kPair)});
  at(job, 3, {0, 1, 10, 11, 12, 20, 21});
  job.rank(3).events.back().state = EventState::kFailed;
  job.rank(3).events.back().result = 6;  // ncclRemoteError
  job.rank(3).exited = true;
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankGatedCollective) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{3});
  EXPECT_EQ(v.comm_id, kOtherComm);
  EXPECT_EQ(v.seq, 2u);
  EXPECT_EQ(shortFunctionName(v.site.function), "pairHandshake");
  EXPECT_EQ(v.waiting, (std::vector<int>{0, 1, 2}));
  // The later stop is kept as evidence.
  ASSERT_EQ(v.tables.size(), 1u);
  EXPECT_EQ(v.tables[0].title, "what followed");
  ASSERT_EQ(v.tables[0].rows.size(), 1u);
  EXPECT_EQ(v.tables[0].rows[0][0], TableCell::of(std::string("rank_exited")));
  EXPECT_NE(v.tables[0].rows[0][2].text.find("rank 3 exited after 3 all-reduces"),
            std::string::npos)
      << v.tables[0].rows[0][2].text;
}

TEST(RootCauseTest, ExtraOpOnAPairCommunicatorExplainsALaterCycle) {
  // The same on blocking host collectives (hostnccl): after the pair steps everyone all-reduces
  // on A; rank 3, one op ahead on B, waits there for rank 2, which waits in A for rank 3. The
  // cycle alone would say rank 3 skipped A's op; the insertion on B came first.
  Job job(4);
  for (int r = 0; r < 2; ++r) {
    job.ops(r, repeat({kTrain}, 2), true);
    at(job, r, {0, 20});
  }
  job.ops(2, {{kTrain}, pairOp(kPair), pairOp(kPair), pairOp(kPair), {kTrain}}, true);
  at(job, 2, {0, 1, 2, 3, 20});
  job.ops(3, {{kTrain}, pairOp(kPair), pairOp(kHandshake), pairOp(kPair), pairOp(kPair)}, true);
  at(job, 3, {0, 1, 2, 3, 4});
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankGatedCollective) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{3});
  EXPECT_EQ(v.comm_id, kOtherComm);
  EXPECT_EQ(v.seq, 2u);
  EXPECT_EQ(v.waiting, (std::vector<int>{0, 1, 2}));
  ASSERT_EQ(v.tables.size(), 1u);
  EXPECT_EQ(v.tables[0].title, "what followed");
}

TEST(RootCauseTest, AMismatchOnACollectiveExplainsAReceiveLeftWaiting) {
  // faultgen seed 2: rank 0 passes int32 where rank 1 passes float32 to their all-reduce (comm A,
  // ranks 0-1) and both block there; rank 1 sends to rank 2 on pair comm B after each all-reduce,
  // so rank 2's 3rd receive has no send. The unmatched receive is a symptom of the mismatch.
  const Site send{"sendActivations(ncclComm*)", 61};
  const Site recv{"recvActivations(ncclComm*)", 62};
  Op to2{send, 64, OpType::kSend};
  to2.root = 2;
  to2.comm = kOtherComm;
  Op from1{recv, 64, OpType::kRecv};
  from1.root = 1;
  from1.comm = kOtherComm;
  Op bad{kTrain};
  bad.dtype = kInt32;
  Job job(3);
  job.ops(0, repeat({kTrain}, 2)).ops(0, {bad}, true);
  job.ops(1, {{kTrain}, to2, {kTrain}, to2, {kTrain}}, true);
  job.ops(2, {from1, from1, from1}, true);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kDtypeMismatch) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{0});
  EXPECT_EQ(v.comm_id, kComm);
  // The receive left waiting is a waiter of the mismatch (the p2p rules leave a wait whose peer is
  // held in a collective to the alignment), named in the headline.
  EXPECT_EQ(v.waiting, (std::vector<int>{1, 2}));
  EXPECT_NE(v.headline.find("rank 2 in ncclRecv #3"), std::string::npos) << v.headline;
}

TEST(RootCauseTest, AnExtraCollectiveAtTheEndExplainsASendLeftWaiting) {
  // faultgen seed 128: after two steps (an all-reduce on A, then rank 0 sends to rank 1 on B) rank
  // 1 alone adds saveCheckpoint()'s all-reduce on A and blocks there; rank 0's 3rd send has no
  // receive. On A the others' streams just end: nobody else issued anything there.
  const Site send{"sendActivations(ncclComm*)", 61};
  const Site recv{"recvActivations(ncclComm*)", 62};
  Op to1{send, 64, OpType::kSend};
  to1.root = 1;
  to1.comm = kOtherComm;
  Op from0{recv, 64, OpType::kRecv};
  from0.root = 0;
  from0.comm = kOtherComm;
  Job job(3);
  job.ops(0, {{kTrain}, to1, {kTrain}, to1, to1}, true);
  job.ops(1, {{kTrain}, from0, {kTrain}, from0, {kSave, 1}}, true);
  job.ops(2, repeat({kTrain}, 2));
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankGatedCollective) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{1});
  EXPECT_EQ(shortFunctionName(v.site.function), "saveCheckpoint");
  ASSERT_FALSE(v.tables.empty());
  EXPECT_EQ(v.tables.back().title, "what followed");
}

TEST(RootCauseTest, AStopWithNoEarlierDivergenceStaysTheVerdict) {
  Job job(3);
  job.ops(0, repeat({kTrain}, 4), true).ops(1, repeat({kTrain}, 4), true);
  job.ops(2, concat(repeat({kTrain}, 3), {pairOp(kPair)}));
  job.rank(2).exited = true;
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankExited) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{2});
  EXPECT_TRUE(v.tables.empty());
}

}  // namespace
}  // namespace ncclrec::analyzer
