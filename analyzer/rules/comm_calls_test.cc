#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "analyzer/rules/early_comm_end.h"
#include "analyzer/rules/group_peer_skip.h"
#include "analyzer/rules/lone_collective.h"
#include "analyzer/rules/partial_split.h"
#include "analyzer/testing/job_builder.h"
#include "format/bbox_layout.h"

namespace ncclrec::analyzer {
namespace {

using namespace testing;  // Job, Op, the call sites (analyzer/testing/job_builder.h)

const Site kAbortSite{"(anonymous namespace)::handleBadBatch(ncclComm*)", 50};
const Site kEndEval{"(anonymous namespace)::finishEvaluation(ncclComm*)", 60};
const Site kSplitSite{"(anonymous namespace)::buildExpertGroup(ncclComm*, int)", 70};
const Site kDispatch{"(anonymous namespace)::dispatchTokens(ncclComm*, int)", 80};
// Three splits of the world, in the order a program makes them.
const Site kDataSplit{"(anonymous namespace)::makeDataParallelGroup(ncclComm*)", 90};
const Site kTensorSplit{"(anonymous namespace)::makeTensorParallelGroup(ncclComm*)", 91};
const Site kExpertSplit{"(anonymous namespace)::makeExpertGroup(ncclComm*)", 92};
// Where a rank that is done destroys the world before it exits.
const Site kShutDown{"(anonymous namespace)::shutDown(ncclComm*)", 90};

// A call that takes no sequence number (life cycle, group marks), appended to `rank`'s stream:
// Job::ops numbers every op it appends.
EventRecord& call(Job& job, int rank, OpType op, uint64_t comm, const Site& site,
                  EventState state = EventState::kCompleted) {
  RankData& r = job.rank(rank);
  // Borrow Job's stack interning: append through ops(), then drop the seq.
  job.ops(rank, {{site, 0, op, -1, -1, -1, comm}});
  EventRecord& e = r.events.back();
  e.op_seq = 0;
  e.state = state;
  e.result = state == EventState::kFailed ? 6 : 0;
  return e;
}

// The group_peer_skip rule alone, on the Engine of `set` (it reads the wait-for graph's ranks).
std::optional<Verdict> groupPeerSkip(const format::LoadedSet& set) {
  const DiagnoseOptions options;
  const CallSites sites(set.ranks);
  const engine::Engine en(set, options, sites);
  return engine::findGroupPeerSkip(en);
}

void failLast(Job& job, int rank) {
  EventRecord& e = job.rank(rank).events.back();
  e.state = EventState::kFailed;
  e.result = 6;  // ncclRemoteError: the peer went away
}

TEST(LifecycleRulesTest, AbortWhileOthersWaitNamesTheAbortingRank) {
  Job job(3);
  for (int r = 0; r < 3; ++r) job.ops(r, repeat({kTrain}, r == 1 ? 3 : 4));
  call(job, 1, OpType::kCommAbort, kComm, kAbortSite);
  failLast(job, 0);
  failLast(job, 2);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kCommAborted) << v.headline;
  EXPECT_EQ(verdictClassName(v.cls), "comm_aborted");
  EXPECT_EQ(v.ranks, std::vector<int>{1});
  EXPECT_EQ(v.op, OpType::kCommAbort);
  EXPECT_EQ(v.seq, 4u);
  EXPECT_EQ(shortFunctionName(v.site.function), "handleBadBatch");
  EXPECT_EQ(v.headline,
            "rank 1 aborted comm c0ffee00 (ncclCommAbort from handleBadBatch() train.cc:50) after "
            "its ncclAllReduce #3 from trainStep() train.cc:27; ranks 0,2 issued ncclAllReduce #4 "
            "from trainStep() train.cc:27 on it and failed in it (NCCL error 6)");
  ASSERT_EQ(v.tables.size(), 1u);
  EXPECT_EQ(v.tables[0].rows.size(), 3u);
  EXPECT_EQ(exitCodeFor(v.cls), 3);
}

TEST(LifecycleRulesTest, AbortAfterItsOwnFailureIsAReactionNotTheCause) {
  Job job(3);
  for (int r = 0; r < 3; ++r) job.ops(r, repeat({kTrain}, 4));
  for (int r = 0; r < 3; ++r) failLast(job, r);
  call(job, 1, OpType::kCommAbort, kComm, kAbortSite);
  EXPECT_NE(job.diagnose().cls, VerdictClass::kCommAborted);
}

TEST(LifecycleRulesTest, DestroyThenExitIsLeftToRankExited) {
  Job job(3);
  for (int r = 0; r < 3; ++r) job.ops(r, repeat({kTrain}, r == 1 ? 3 : 4), r != 1);
  call(job, 1, OpType::kCommDestroy, kComm, kEndEval);
  job.rank(1).exited = true;
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankExited) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{1});
}

TEST(LifecycleRulesTest, DestroyWhileOthersStillIssueOpsNamesTheRankThatWentOn) {
  Job job(3);
  for (int r = 0; r < 3; ++r) job.ops(r, repeat({kLoss, 1}, r == 1 ? 3 : 4), r != 1);
  call(job, 1, OpType::kCommDestroy, kComm, kEndEval);
  job.ops(1, {{kTrain, 4096, OpType::kAllReduce, kFloat, kSum, -1, kOtherComm}}, true);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kCommDestroyed) << v.headline;
  EXPECT_EQ(verdictClassName(v.cls), "comm_destroyed");
  EXPECT_EQ(v.ranks, std::vector<int>{1});
  EXPECT_EQ(shortFunctionName(v.site.function), "finishEvaluation");
  EXPECT_NE(v.headline.find("and went on (ncclAllReduce on comm beef0000 from trainStep()"),
            std::string::npos)
      << v.headline;
  EXPECT_NE(v.headline.find("ranks 0,2 issued ncclAllReduce #4 from logLoss() train.cc:40 on it "
                            "and wait in it"),
            std::string::npos)
      << v.headline;
}

TEST(LifecycleRulesTest, CollectiveOnACommunicatorTheOthersNeverUsedIsGated) {
  // The world communicator carries no collective; each step runs on a sub-communicator. Rank 2
  // adds a checkpoint all-reduce on the world (faultgen seed 49): ranks 0 and 1 finish and destroy
  // the world, its all-reduce fails, it exits, and their last step failed on it.
  Job job(3);
  for (int r = 0; r < 3; ++r) job.ops(r, repeat(pairOp(kPair), 3));
  job.ops(2, {{kSave, 1}}, true);
  failLast(job, 2);
  job.rank(2).exited = true;
  for (int r = 0; r < 2; ++r) {
    job.ops(r, {pairOp(kPair)}, true);
    failLast(job, r);
    call(job, r, OpType::kCommDestroy, kComm, kEndEval);
    job.rank(r).exited = true;
  }
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankGatedCollective) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{2});
  EXPECT_EQ(v.comm_id, kComm);
  EXPECT_EQ(shortFunctionName(v.site.function), "saveCheckpoint");
}

TEST(LifecycleRulesTest, RanksWaitingInTheFirstCollectiveOfAnEarlyLeaverAreNotGated) {
  // Rank 2 of 3 exits (no destroy) before the world's first collective: the two that issued it
  // are the majority and no rank finished the communicator, so this is no extra collective.
  Job job(3);
  for (int r = 0; r < 3; ++r) job.ops(r, repeat(pairOp(kPair), 3));
  job.rank(2).exited = true;
  for (int r = 0; r < 2; ++r) job.ops(r, {{kSave, 1}}, true);
  const Verdict v = job.diagnose();
  EXPECT_NE(v.cls, VerdictClass::kRankGatedCollective) << v.headline;
}

TEST(LifecycleRulesTest, EveryRankDestroyingAtTheEndIsNoHang) {
  Job job(3);
  for (int r = 0; r < 3; ++r) {
    job.ops(r, repeat({kTrain}, 4));
    call(job, r, OpType::kCommDestroy, kComm, kEndEval);
  }
  EXPECT_EQ(job.diagnose().cls, VerdictClass::kNoHang);
}

TEST(LifecycleRulesTest, SplitSkippedByOneRankNamesIt) {
  Job job(4);
  for (int r = 0; r < 4; ++r) {
    job.ops(r, repeat({kTrain}, 2));
    if (r != 3) {
      call(job, r, OpType::kCommSplit, kComm, kSplitSite, EventState::kEnqueued);
    } else {
      job.ops(r, {{kTrain}}, true);
    }
  }
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kSkippedCollective) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{3});
  EXPECT_EQ(v.op, OpType::kCommSplit);
  EXPECT_EQ(shortFunctionName(v.site.function), "buildExpertGroup");
  EXPECT_EQ(v.headline,
            "rank 3 skipped ncclCommSplit of comm c0ffee00 from buildExpertGroup() train.cc:70 "
            "that ranks 0-2 called after collective #2; it issued ncclAllReduce #3 from "
            "trainStep() train.cc:27 instead; ranks 0-2 wait for it in ncclCommSplit from "
            "buildExpertGroup() train.cc:70");
  EXPECT_EQ(v.waiting, (std::vector<int>{0, 1, 2}));
}

TEST(LifecycleRulesTest, ASkipperThatDestroyedTheParentAndLeftIsNamed) {
  // faultgen seed 482: rank 3 never calls the split the others call after collective #2; it
  // destroys the parent communicator and exits, and the others' splits fail (remote error). Read
  // as an NCCL error of rank 0 before.
  Job job(4);
  for (int r = 0; r < 4; ++r) {
    job.ops(r, repeat({kTrain}, 2));
    if (r != 3) {
      call(job, r, OpType::kCommSplit, kComm, kSplitSite, EventState::kFailed);
      job.rank(r).exited = true;
    } else {
      call(job, r, OpType::kCommDestroy, kComm, kShutDown);
      job.rank(r).exited = true;
    }
  }
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kSkippedCollective) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{3});
  EXPECT_EQ(v.op, OpType::kCommSplit);
  EXPECT_EQ(v.headline,
            "rank 3 skipped ncclCommSplit of comm c0ffee00 from buildExpertGroup() train.cc:70 "
            "that ranks 0-2 called after collective #2; it issued ncclCommDestroy on comm c0ffee00 "
            "from shutDown() train.cc:90 instead");
}

TEST(LifecycleRulesTest, ASkipperWhoseOneSplitPairedWithTheOthersFirstThenLeftIsNamed) {
  // faultgen seed 9037: the others split the world twice (data, then tensor parallel); rank 3
  // skips the first, so its one split (tensor parallel) pairs with their first, and it works
  // alone on what it made, destroys the world and exits. The others' second split has no partner
  // and fails when it leaves (remote error): read as an NCCL error of rank 2 before.
  Job job(4);
  for (int r = 0; r < 4; ++r) {
    job.ops(r, repeat({kTrain}, 2));
    if (r != 3) {
      call(job, r, OpType::kCommSplit, kComm, kDataSplit);
      call(job, r, OpType::kCommSplit, kComm, kTensorSplit, EventState::kFailed);
    } else {
      call(job, r, OpType::kCommSplit, kComm, kTensorSplit);
      call(job, r, OpType::kCommDestroy, kComm, kShutDown);
    }
    job.rank(r).exited = true;
  }
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kSkippedCollective) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{3});
  EXPECT_EQ(v.op, OpType::kCommSplit);
  EXPECT_EQ(shortFunctionName(v.site.function), "makeDataParallelGroup") << v.headline;
}

TEST(LifecycleRulesTest, AbortWhilePeersSendOrReceiveNamesTheAbortingRank) {
  // faultgen seeds 11 and 33: rank 1 aborts the pipeline's communicator where it would receive;
  // its predecessor's send and its successor's receive fail with a remote error. The first failed
  // call read as the verdict (nccl_error naming rank 0).
  const Site send{"(anonymous namespace)::sendActivations(ncclComm*)", 95};
  const Site recv{"(anonymous namespace)::recvActivations(ncclComm*)", 96};
  Job job(3);
  for (int r = 0; r < 3; ++r) job.ops(r, repeat({kTrain}, 3));
  job.ops(0, {{send, 64, OpType::kSend, kFloat, -1, 1}});
  failLast(job, 0);
  call(job, 1, OpType::kCommAbort, kComm, kAbortSite);
  job.ops(2, {{recv, 64, OpType::kRecv, kFloat, -1, 1}});
  failLast(job, 2);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kCommAborted) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{1});
  EXPECT_EQ(shortFunctionName(v.site.function), "handleBadBatch");
  EXPECT_EQ(v.waiting, (std::vector<int>{0, 2})) << v.headline;
}

TEST(LifecycleRulesTest, TheSkippedSplitIsTheOneMissingFromTheRanksCalls) {
  // faultgen seed 77: three splits of the world; rank 2 does not make the first (data parallel),
  // makes the other two, then broadcasts on the world where its peers wait. It made two splits to
  // their three, but the one it lacks is the first, not the third.
  Job job(4);
  for (int r = 0; r < 4; ++r) {
    if (r != 2) call(job, r, OpType::kCommSplit, kComm, kDataSplit);
    call(job, r, OpType::kCommSplit, kComm, kTensorSplit);
    call(job, r, OpType::kCommSplit, kComm, kExpertSplit);
    job.ops(r, {{kTrain}}, true);
  }
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kSkippedCollective) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{2});
  EXPECT_EQ(v.op, OpType::kCommSplit);
  EXPECT_EQ(shortFunctionName(v.site.function), "makeDataParallelGroup") << v.headline;
}

TEST(LifecycleRulesTest, ASkipperThatWentOnToPointToPointWorkIsNamed) {
  // faultgen seed 110: rank 2 does not split the world and receives from rank 1, which waits for
  // it in the split (read as p2p_mismatch before: rank 1 "posted no send").
  const Site recv{"(anonymous namespace)::recvActivations(ncclComm*)", 96};
  Job job(4);
  for (int r = 0; r < 4; ++r) {
    if (r != 2) call(job, r, OpType::kCommSplit, kComm, kDataSplit, EventState::kEnqueued);
  }
  job.ops(2, {{recv, 16, OpType::kRecv, kFloat, -1, 1}}, true);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kSkippedCollective) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{2});
  EXPECT_EQ(shortFunctionName(v.site.function), "makeDataParallelGroup") << v.headline;
  EXPECT_NE(v.headline.find("it issued ncclRecv #1 from recvActivations() train.cc:96 instead"),
            std::string::npos)
      << v.headline;
}

TEST(LifecycleRulesTest, ASkipperWhoseOneSplitPairedWithTheOthersFirstIsNamed) {
  // faultgen seed 189: rank 3 skips the first of two splits; its one split pairs with the
  // others' first and completes, it reduces on the communicator that made while the others wait
  // in their second split (read as undecided before: no op on the parent after the split).
  const Site reduce{"(anonymous namespace)::reduceLoss(ncclComm*)", 97};
  Job job(5);
  for (int r = 0; r < 5; ++r) {
    if (r == 3) {
      call(job, r, OpType::kCommSplit, kComm, kTensorSplit);
      job.ops(r, {{reduce, 1024, OpType::kReduce, kFloat, kSum, 1, kOtherComm}}, true);
    } else {
      call(job, r, OpType::kCommSplit, kComm, kDataSplit);
      call(job, r, OpType::kCommSplit, kComm, kTensorSplit, EventState::kEnqueued);
    }
  }
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kSkippedCollective) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{3});
  EXPECT_EQ(shortFunctionName(v.site.function), "makeDataParallelGroup") << v.headline;
  EXPECT_NE(v.headline.find("it issued ncclReduce #1 from reduceLoss() train.cc:97 instead"),
            std::string::npos)
      << v.headline;
}

TEST(LifecycleRulesTest, SplitCalledByOneRankAloneIsGated) {
  Job job(4);
  for (int r = 0; r < 4; ++r) {
    job.ops(r, repeat({kTrain}, 2));
    if (r == 0) {
      call(job, r, OpType::kCommSplit, kComm, kSplitSite, EventState::kEnqueued);
    } else {
      job.ops(r, {{kTrain}}, true);
    }
  }
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankGatedCollective) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{0});
  EXPECT_NE(v.headline.find("rank 0 alone (rank == 0) called ncclCommSplit"), std::string::npos)
      << v.headline;
}

TEST(LifecycleRulesTest, EveryRankSplittingIsNoHang) {
  Job job(3);
  for (int r = 0; r < 3; ++r) {
    job.ops(r, repeat({kTrain}, 2));
    call(job, r, OpType::kCommSplit, kComm, kSplitSite);
    job.ops(r, repeat({kTrain}, 2));
  }
  EXPECT_EQ(job.diagnose().cls, VerdictClass::kNoHang);
}

// One grouped exchange of rank `me` with `peers` on kComm (per-peer seq `seq`), pending or not.
void exchange(Job& job, int me, const std::vector<int>& peers, uint64_t seq, bool pending) {
  const EventState state = pending ? EventState::kEnqueued : EventState::kCompleted;
  call(job, me, OpType::kGroupStart, 0, kDispatch).group_depth = 0;
  for (int p : peers) {
    for (OpType op : {OpType::kSend, OpType::kRecv}) {
      EventRecord& e = call(job, me, op, kComm, kDispatch, state);
      e.setPeer(p);
      e.op_seq = seq;
      e.group_depth = 1;
      e.flags |= format::kEventInGroup;
    }
  }
  call(job, me, OpType::kGroupEnd, 0, kDispatch, state).group_depth = 1;
}

TEST(LifecycleRulesTest, GroupedExchangeThatLeavesAPeerOutBlamesTheRankThatLeftItOut) {
  // samples/alltoall_skip: rank 2's second exchange has nothing with rank 0.
  Job job(4);
  for (int r = 0; r < 4; ++r) {
    std::vector<int> all;
    for (int p = 0; p < 4; ++p) {
      if (p != r) all.push_back(p);
    }
    exchange(job, r, all, 1, false);
    std::vector<int> second = all;
    if (r == 2) second = {1, 3};
    exchange(job, r, second, 2, r == 0);
    if (r != 0) job.ops(r, {{kLoss, 1}}, true);
  }
  // Rank 0's exchanges with ranks 1 and 3 paired: only the ones with rank 2 wait.
  for (EventRecord& e : job.rank(0).events) {
    if (format::isP2p(e.op) && e.op_seq == 2 && e.peer() != 2) e.state = EventState::kCompleted;
  }
  const format::LoadedSet set = job.set();
  const std::optional<Verdict> v = groupPeerSkip(set);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(job.diagnose().cls, VerdictClass::kP2pMismatch);
  EXPECT_EQ(job.diagnose().ranks, std::vector<int>{2});
  EXPECT_EQ(v->ranks, std::vector<int>{2});
  EXPECT_EQ(shortFunctionName(v->site.function), "dispatchTokens");
  EXPECT_EQ(v->headline,
            "rank 2 left rank 0 out of its grouped sends and receives #2 on comm c0ffee00 from "
            "dispatchTokens() train.cc:80: that group posts to ranks 1,3 only, while rank 0's "
            "group #2 waits in ncclSend #2 to rank 2 and ncclRecv #2 from rank 2");
  ASSERT_EQ(v->tables.size(), 1u);
}

TEST(LifecycleRulesTest, CompleteGroupedExchangesAreNoHang) {
  Job job(3);
  for (int r = 0; r < 3; ++r) {
    std::vector<int> all;
    for (int p = 0; p < 3; ++p) {
      if (p != r) all.push_back(p);
    }
    for (uint64_t s = 1; s <= 3; ++s) exchange(job, r, all, s, false);
  }
  const format::LoadedSet set = job.set();
  EXPECT_FALSE(groupPeerSkip(set).has_value());
  EXPECT_EQ(job.diagnose().cls, VerdictClass::kNoHang);
}

TEST(LifecycleRulesTest, MismatchInASubCommunicatorComesBeforeTheWaitItCauses) {
  // samples/subcomm_root_mismatch: ranks 1-3 broadcast on a sub-communicator, rank 3 from another
  // root; rank 2's broadcast completed (it only receives from the true root) and it waits in the
  // world's next all-reduce with rank 0, for ranks 1 and 3, which wait in the broadcast. The
  // world's op is older, but the root mismatch is the cause.
  const Site kSync{"(anonymous namespace)::syncEmbeddings(ncclComm*, int)", 90};
  Job job(4);
  job.ops(0, repeat({kLoss, 1}, 3), true);
  for (int r = 1; r < 4; ++r) {
    job.ops(r, repeat({kLoss, 1}, 2));
    const int root = r == 3 ? 1 : 0;
    job.ops(r, {{kSync, 512, OpType::kBroadcast, kFloat, kSum, root, kOtherComm}}, r != 2);
    if (r == 2) job.ops(r, {{kLoss, 1}}, true);
  }
  // The world's pending all-reduce is older than the broadcasts.
  job.rank(0).events.back().setEnqueueNs(kT0);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRootMismatch) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{3});
  EXPECT_EQ(shortFunctionName(v.site.function), "syncEmbeddings");
}

}  // namespace
}  // namespace ncclrec::analyzer
