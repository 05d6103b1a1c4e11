// Cause before symptom for ranks that left (leavers.cc): a rank that stopped after its own call
// failed because a peer was gone is that peer's victim.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analyzer/diagnose.h"
#include "analyzer/testing/job_builder.h"

namespace ncclrec::analyzer {
namespace {

using namespace testing;  // Job, Op, the call sites (analyzer/testing/job_builder.h)

const Site kSend{"(anonymous namespace)::exchangeHalo(ncclComm*)", 30};
const Site kRecv{"(anonymous namespace)::exchangeHalo(ncclComm*)", 32};

Op p2p(const Site& site, OpType op, int peer, uint64_t comm) {
  Op o{site, 64, op};
  o.root = peer;
  o.comm = comm;
  return o;
}

void fail(Job& job, int rank) {
  EventRecord& e = job.rank(rank).events.back();
  e.state = EventState::kFailed;
  e.result = 6;  // ncclRemoteError
}

TEST(LeaversTest, ARankThatExitedAfterAPeerLeftIsNotTheCulprit) {
  // faultgen seed 195: rank 3 returns from main between two steps; rank 1's send to it on their
  // pair communicator fails, and rank 1 exits on the error. On the world communicator both streams
  // end while ranks 0 and 2 wait in the 4th all-reduce: rank 3 left, rank 1 followed.
  Job job(4);
  for (int r = 0; r < 4; ++r) job.ops(r, repeat({kTrain}, 3));
  job.ops(0, {{kTrain}}, true).ops(2, {{kTrain}}, true);
  job.ops(1, {p2p(kSend, OpType::kSend, 1, kOtherComm)});
  fail(job, 1);
  job.rank(1).exited = true;
  job.rank(3).exited = true;
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankExited) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{3}) << v.headline;
}

TEST(LeaversTest, PeersFailingTheirSendsAfterARankExitedNameThatRank) {
  // faultgen seed 59: every collective completed; rank 1 returns from main where it would receive,
  // so rank 0's send to it and rank 2's receive from it fail with a remote error. The first failed
  // call read as the verdict (nccl_error naming rank 0).
  Job job(3);
  for (int r = 0; r < 3; ++r) job.ops(r, repeat({kTrain}, 3));
  job.ops(0, {p2p(kSend, OpType::kSend, 1, kComm)});
  fail(job, 0);
  job.ops(2, {p2p(kRecv, OpType::kRecv, 1, kComm)});
  fail(job, 2);
  job.rank(1).exited = true;
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankExited) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{1});
  EXPECT_EQ(shortFunctionName(v.site.function), "trainStep");
  // Named by the p2p stop rule (p2p_stop.cc) or the leavers' rule, whichever comes first.
  EXPECT_EQ(v.headline.rfind("rank 1 exited", 0), 0u) << v.headline;
}

TEST(LeaversTest, AFailedCallWithNoRankGoneStaysAnNcclError) {
  // Rank 1 wrote a dump (a live process's snapshot) and has nothing of its own failed.
  Job job(2);
  for (int r = 0; r < 2; ++r) job.ops(r, repeat({kTrain}, 3));
  job.ops(0, {p2p(kSend, OpType::kSend, 1, kComm)});
  fail(job, 0);
  job.rank(1).source = format::SourceKind::kDump;
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kNcclError) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{0});
}

TEST(LeaversTest, ABlackBoxWhosePeersLostItsSendsAndReceivesDied) {
  // faultgen seed 235: rank 0 is killed (SIGKILL: no exit mark, only its black box) between two
  // steps; its ring neighbours' send and receive to it fail with a remote error and they exit.
  Job job(3);
  for (int r = 0; r < 3; ++r) job.ops(r, repeat({kTrain}, 3));
  job.ops(1, {p2p(kRecv, OpType::kRecv, 0, kComm)});
  fail(job, 1);
  job.ops(2, {p2p(kSend, OpType::kSend, 0, kComm)});
  fail(job, 2);
  for (int r = 1; r < 3; ++r) {
    job.rank(r).source = format::SourceKind::kDump;
    job.rank(r).exited = true;
  }
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankCrashed) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{0});
}

TEST(LeaversTest, ABlackBoxWhosePeersLostACollectiveItHadNothingPendingOnDied) {
  // faultgen seed 22: rank 3 is killed between two calls (its black box only, no exit mark,
  // nothing pending); ranks 0 and 2 fail their next all-reduce with a remote error, dump and exit;
  // rank 1 goes on and waits in a collective of a communicator that rank 0 holds. Rank 0's exit
  // reads as a stop there: the kill is the cause.
  const Op pair{kPair, 1, OpType::kAllReduce, kFloat, kSum, -1, kOtherComm};
  Job job(4);
  for (int r = 0; r < 4; ++r) job.ops(r, repeat({kTrain}, 3));
  for (int r : {0, 1}) job.ops(r, repeat({pair}, 2));
  for (int r : {0, 2}) {
    job.ops(r, {{kTrain}});
    fail(job, r);
    job.rank(r).source = format::SourceKind::kDump;
    job.rank(r).exited = true;
  }
  job.ops(1, {{kTrain}}).ops(1, {pair}, true);  // its 4th completed (a group, on hostnccl)
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankCrashed) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{3}) << v.headline;
}

}  // namespace
}  // namespace ncclrec::analyzer
