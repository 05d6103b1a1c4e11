#include "analyzer/wait_graph.h"

#include <gtest/gtest.h>

#include <vector>

#include "analyzer/engine.h"
#include "analyzer/testing/job_builder.h"

namespace ncclrec::analyzer {
namespace {

using namespace testing;  // Job, Op, the call sites (analyzer/testing/job_builder.h)

// The graph of `set` as the Engine builds it, with its liveness facts.
struct Built {
  explicit Built(const format::LoadedSet& s) : set(s), sites(set.ranks), en(set, options, sites) {}
  format::LoadedSet set;
  DiagnoseOptions options;
  CallSites sites;
  engine::Engine en;
  const WaitGraph& g() const { return en.waits(); }
};

TEST(WaitGraphTest, ACollectiveWaitsForTheMembersThatHaveNotIssuedItsSeq) {
  // Ranks 0, 1, 3 wait in all-reduce #3; rank 2 completed #2 and went on in host code.
  Job job(4);
  for (int r = 0; r < 4; ++r) job.ops(r, repeat(Op{kTrain}, r == 2 ? 2 : 3), r != 2);
  const Built b(job.set());
  const WaitGraph& g = b.g();
  for (size_t r : {0u, 1u, 3u}) {
    ASSERT_NE(g.blocked(r), nullptr) << r;
    EXPECT_EQ(g.blocked(r)->op_seq, 3u);
    EXPECT_EQ(g.waitsFor(r), std::vector<size_t>{2}) << r;
    EXPECT_EQ(g.kindOf(r), WaitKind::kCollectiveSlot);
    EXPECT_EQ(g.waitsIn(r).size(), 1u);
  }
  EXPECT_EQ(g.blocked(2), nullptr);
  EXPECT_TRUE(g.waitsFor(2).empty());
  EXPECT_TRUE(g.waitsIn(2).empty());  // in host code
  EXPECT_EQ(g.behind(kComm, 3, 0), std::vector<size_t>{2});
  EXPECT_EQ(g.behind(kComm, 2, 0), std::vector<size_t>{});
  EXPECT_EQ(g.reached(2, kComm), 2u);
  EXPECT_FALSE(g.owes(2, kOtherComm, 1));  // not a member there
  EXPECT_EQ(g.rankIn(2, kOtherComm), std::nullopt);
  EXPECT_TRUE(g.issued(2, kComm, 2));
  EXPECT_FALSE(g.issued(2, kComm, 3));
  EXPECT_FALSE(g.anySendReceiveWait());
  EXPECT_EQ(g.liveness(2), Liveness::kRunning);
}

TEST(WaitGraphTest, TheGlobalRankOfACommRankIsThatOfTheProcessHoldingIt) {
  // A set whose processes are global ranks 7 and 5 (a job's recordings in another order): the
  // global rank is the holder's, not its index; a rank no recording shows has none.
  Job job(2);
  for (int r = 0; r < 2; ++r) job.ops(r, repeat(Op{kTrain}, 2), false);
  format::LoadedSet set = job.set();
  set.ranks[0].global_rank = 7;
  set.ranks[1].global_rank = 5;
  const Built b(set);
  const WaitGraph& g = b.g();
  EXPECT_EQ(g.processOf(kComm, 1), std::optional<size_t>{1});
  EXPECT_EQ(g.globalRankOf(kComm, 0), 7);
  EXPECT_EQ(g.globalRankOf(kComm, 1), 5);
  EXPECT_EQ(g.globalRankOf(kComm, 2), -1);
  EXPECT_EQ(g.globalRankOf(kOtherComm, 0), -1);
}

TEST(WaitGraphTest, AMemberKnownOnlyByItsCommRecordIsBehind) {
  // Rank 1 created the pair's communicator but is blocked in the world's all-reduce #2 before its
  // first call there; rank 0 waits for it in the pair's #1, and it waits for rank 0 in #2: a cycle
  // the events alone would not show.
  Job job(2);
  job.ops(0, {Op{kTrain}, pairOp(kPair)}, true);
  job.ops(1, repeat(Op{kTrain}, 2), true);
  for (int r = 0; r < 2; ++r) numberLikeNccl(job.rank(r));
  job.created(1, kOtherComm, 2);
  const Built b(job.set());
  const WaitGraph& g = b.g();
  EXPECT_EQ(g.processOf(kOtherComm, 1), std::optional<size_t>{1});
  EXPECT_EQ(g.members(kOtherComm).size(), 2u);
  EXPECT_EQ(g.behind(kOtherComm, 1, 0), std::vector<size_t>{1});
  EXPECT_FALSE(g.issued(1, kOtherComm, 1));                   // no call there at all
  EXPECT_EQ(g.rankIn(1, kOtherComm), std::optional<int>{1});  // from its comm record
  EXPECT_EQ(g.rankIn(0, kOtherComm), std::optional<int>{0});  // from its events
  EXPECT_TRUE(g.owes(1, kOtherComm, 1));
  EXPECT_FALSE(g.owes(0, kOtherComm, 1));  // it issued #1
  EXPECT_TRUE(g.owes(0, kComm, 2));
  EXPECT_EQ(g.waitsFor(0), std::vector<size_t>{1});
  EXPECT_EQ(g.waitsFor(1), std::vector<size_t>{0});
  EXPECT_EQ(b.en.set().ranks.size(), 2u);
}

TEST(WaitGraphTest, ASendWhoseCounterpartIsMissingWaitsForItsPeer) {
  Job job(2);
  Op send{kHandshake, 16, OpType::kSend};
  send.root = 1;  // the peer
  job.ops(0, {Op{kTrain}, send}, true);
  job.ops(1, {Op{kTrain}});
  for (int r = 0; r < 2; ++r) numberLikeNccl(job.rank(r));
  {
    const Built b(job.set());
    const WaitGraph& g = b.g();
    ASSERT_NE(g.blocked(0), nullptr);
    EXPECT_EQ(g.blocked(0)->op, OpType::kSend);
    EXPECT_EQ(g.kindOf(0), WaitKind::kSendReceive);
    EXPECT_EQ(g.waitsFor(0), std::vector<size_t>{1});
    EXPECT_TRUE(g.anySendReceiveWait());
    EXPECT_FALSE(g.counterpartPosted(*g.blocked(0)));
  }
  // Rank 1 posted the receive (it waits in it too): the pair is matched, no one waits for anyone.
  Op recv{kHandshake, 16, OpType::kRecv};
  recv.root = 0;
  job.ops(1, {recv}, true);
  numberLikeNccl(job.rank(1));
  const Built b(job.set());
  const WaitGraph& g = b.g();
  EXPECT_EQ(g.blocked(0), nullptr);
  EXPECT_TRUE(g.counterpartPosted(job.rank(0).events.back()));
  EXPECT_FALSE(g.anySendReceiveWait());
  EXPECT_EQ(g.waitsIn(1).size(), 1u);  // in a call, waiting for no one the graph can name
}

TEST(WaitGraphTest, ACreationIsWhereARankWaitsWhenItIsNewerThanItsPendingOps) {
  // Rank 0 is in a communicator's creation after its all-reduces completed; rank 1 waits in an
  // all-reduce and then (in another thread's order) nothing else.
  Job job(2);
  Op init{kSave, 0, OpType::kCommInitRank};
  init.comm = kOtherComm;
  job.ops(0, {Op{kTrain}, init}, true);
  job.ops(1, repeat(Op{kTrain}, 2), true);
  const Built b(job.set());
  const WaitGraph& g = b.g();
  ASSERT_NE(g.creating(0), nullptr);
  EXPECT_EQ(g.creating(0)->op, OpType::kCommInitRank);
  EXPECT_TRUE(g.waitsIn(0).empty());  // no collective or send/receive pending
  EXPECT_EQ(g.newestWait(0), g.creating(0));
  EXPECT_EQ(g.creating(1), nullptr);
  ASSERT_NE(g.newestWait(1), nullptr);
  EXPECT_EQ(g.newestWait(1)->op, OpType::kAllReduce);
}

TEST(WaitGraphTest, EachRankStandsByTheEnginesLivenessFacts) {
  Job job(4);
  for (int r = 0; r < 4; ++r) job.ops(r, repeat(Op{kTrain}, r == 0 ? 3 : 2), r == 0);
  job.rank(1).exited = true;
  job.rank(2).fatal_signal = 9;
  job.rank(3).process_state = 'T';  // the launcher saw it stopped
  const Built b(job.set());
  const WaitGraph& g = b.g();
  EXPECT_EQ(g.liveness(0), Liveness::kRunning);
  EXPECT_EQ(g.liveness(1), Liveness::kExited);
  EXPECT_EQ(g.liveness(2), Liveness::kCrashed);
  EXPECT_EQ(g.liveness(3), Liveness::kNotRunning);
  EXPECT_FALSE(g.gone(0));
  EXPECT_TRUE(g.gone(1));
  EXPECT_TRUE(g.gone(2));
  EXPECT_FALSE(g.gone(3));  // there, only not running
  EXPECT_EQ(g.waitsFor(0), (std::vector<size_t>{1, 2, 3}));
}

}  // namespace
}  // namespace ncclrec::analyzer
