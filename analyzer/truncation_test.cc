// diagnose() on streams that stopped while others wait for them (truncation.cc): a rank that
// exited, crashed, died, is stuck in host code or is blocked on another communicator. The
// divergence classes are in diagnose_test.cc.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analyzer/diagnose.h"
#include "analyzer/testing/job_builder.h"

namespace ncclrec::analyzer {
namespace {

using format::EventRecord;
using format::EventState;
using format::OpType;
using format::RankData;
using namespace testing;  // Job, Op, the call sites (analyzer/testing/job_builder.h)

TEST(DiagnoseTest, ExitedRankWithCounts) {
  Job job(4);
  for (int r = 0; r < 3; ++r) job.ops(r, repeat({kTrain}, 100), true);
  job.ops(3, repeat({kTrain}, 99));
  job.rank(3).exited = true;
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankExited) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{3});
  EXPECT_EQ(v.seq, 100u);
  EXPECT_EQ(v.headline,
            "rank 3 exited after 99 all-reduces from trainStep(); ranks 0-2 are in their 100th");
  ASSERT_FALSE(v.evidence.empty());
  EXPECT_EQ(v.evidence.back().note, "exited");
}

TEST(DiagnoseTest, CrashedRankFromTheSignalMarkOrAStaleHeartbeat) {
  for (const bool by_signal : {true, false}) {
    Job job(3);
    job.ops(0, repeat({kTrain}, 5), true)
        .ops(1, repeat({kTrain}, 4))
        .ops(2, repeat({kTrain}, 5), true);
    if (by_signal) {
      job.rank(1).fatal_signal = 11;
    } else {
      job.rank(1).heartbeat_ns = kT0 + 90 * kSec;  // 10 s before the others'
    }
    const Verdict v = job.diagnose();
    EXPECT_EQ(v.cls, VerdictClass::kRankCrashed) << v.headline;
    EXPECT_EQ(v.ranks, std::vector<int>{1});
    EXPECT_NE(v.headline.find(by_signal ? "SIGSEGV" : "heartbeat stopped 10.0s"), std::string::npos)
        << v.headline;
  }
}

TEST(DiagnoseTest, RankWhosePeersLostTheConnectionCrashed) {
  // SIGKILL leaves no mark; hostnccl's peers see the socket close and fail with a remote error.
  Job job(3);
  job.ops(0, repeat({kTrain}, 3)).ops(1, repeat({kTrain}, 2)).ops(2, repeat({kTrain}, 3));
  for (int r : {0, 2}) {
    job.rank(r).events.back().state = EventState::kFailed;
    job.rank(r).events.back().result = 6;  // ncclRemoteError
    job.rank(r).exited = true;
  }
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankCrashed) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{1});
  EXPECT_NE(v.headline.find("ranks 0,2 failed in their 3rd (NCCL error 6)"), std::string::npos)
      << v.headline;

  // Analyzed soon after the kill: rank 0 has not noticed yet (still pending, alive, heartbeat
  // fresh), ranks 1-2 already failed with the remote error. One peer's error is enough.
  Job soon(4);
  soon.ops(0, repeat({kTrain}, 3), true).ops(3, repeat({kTrain}, 2));
  soon.ops(1, repeat({kTrain}, 3)).ops(2, repeat({kTrain}, 3));
  for (int r : {1, 2}) {
    soon.rank(r).events.back().state = EventState::kFailed;
    soon.rank(r).events.back().result = 6;  // ncclRemoteError
    soon.rank(r).exited = true;
  }
  const Verdict w = soon.diagnose();
  EXPECT_EQ(w.cls, VerdictClass::kRankCrashed) << w.headline;
  EXPECT_EQ(w.ranks, std::vector<int>{3});
}

TEST(DiagnoseTest, ARankSeenAliveIsNotTheOneItsPeersLostWhenAnotherWasKilled) {
  // Faultgen seed 10066: rank 3 is killed (the launcher saw SIGKILL) before all-reduce #3; rank 2
  // fails it (remote error) and exits; rank 1 still waits in it; rank 0, which dumped alive
  // blocked in a pair all-reduce on another communicator, never issued it either. The lost
  // connection is rank 3's: rank 0 is not named with it.
  Op on_b{kLoss, 1};
  on_b.comm = kOtherComm;
  Job job(4);
  job.ops(0, {{kTrain}, {kTrain}, on_b}, true);
  job.ops(1, repeat({kTrain}, 3), true).ops(2, repeat({kTrain}, 3)).ops(3, repeat({kTrain}, 2));
  job.rank(2).events.back().state = EventState::kFailed;
  job.rank(2).events.back().result = 6;  // ncclRemoteError
  job.rank(2).exited = true;
  job.rank(3).fatal_signal = 9;
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankCrashed) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{3}) << v.headline;
}

TEST(DiagnoseTest, BlackBoxRankBorrowsSymbolsAndAlignsWithDumps) {
  Job job(2);
  job.ops(0, repeat({kTrain}, 3), true).ops(1, repeat({kTrain}, 2));
  for (auto& [id, st] : job.rank(1).stacks) {
    st.frames[0].function.clear();
    st.frames[0].file.clear();
    st.frames[0].line = 0;
  }
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankStuckInHost) << v.headline;
  EXPECT_NE(v.headline.find("from trainStep() train.cc:27"), std::string::npos) << v.headline;
}

TEST(DiagnoseTest, AliveRankWhoseLastOpEndedLongAgoIsStuckInHost) {
  Job job(3);
  job.ops(0, repeat({kTrain}, 5), true)
      .ops(1, repeat({kTrain}, 4))
      .ops(2, repeat({kTrain}, 5), true);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankStuckInHost) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{1});
  EXPECT_EQ(shortFunctionName(v.site.function), "trainStep");
  EXPECT_NE(v.headline.find("completed"), std::string::npos) << v.headline;
}

TEST(DiagnoseTest, SeveralRanksStoppedAlikeAreNamedInThePlural) {
  // Ranks 1 and 3 both stopped after 4 all-reduces, in host code; ranks 0 and 2 wait in the 5th.
  Job host(4);
  host.ops(0, repeat({kTrain}, 5), true).ops(1, repeat({kTrain}, 4));
  host.ops(2, repeat({kTrain}, 5), true).ops(3, repeat({kTrain}, 4));
  const Verdict v = host.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankStuckInHost) << v.headline;
  EXPECT_EQ(v.ranks, (std::vector<int>{1, 3}));
  EXPECT_EQ(v.headline.rfind("ranks 1,3 are alive but stuck in host code: ", 0), 0u) << v.headline;

  // Both blocked in the same op of another communicator, which nobody else holds.
  Op side{kLoss, 1};
  side.comm = kOtherComm;
  Job blocked(4);
  blocked.ops(0, repeat({kTrain}, 3), true).ops(2, repeat({kTrain}, 3), true);
  for (int r : {1, 3}) blocked.ops(r, repeat({kTrain}, 2)).ops(r, {side}, true);
  const Verdict b = blocked.diagnose();
  EXPECT_EQ(b.cls, VerdictClass::kRankBlockedElsewhere) << b.headline;
  EXPECT_EQ(b.ranks, (std::vector<int>{1, 3}));
  EXPECT_EQ(b.headline.rfind("ranks 1,3 are blocked in ", 0), 0u) << b.headline;
  EXPECT_NE(b.headline.find(" while ranks 0,2 wait for them in ncclAllReduce #3"),
            std::string::npos)
      << b.headline;
}

TEST(DiagnoseTest, RankBlockedInAnotherCommunicator) {
  Op side{kLoss, 1};
  side.comm = kOtherComm;
  Job job(3);
  job.ops(0, repeat({kTrain}, 3), true).ops(2, repeat({kTrain}, 3), true);
  job.ops(1, repeat({kTrain}, 2)).ops(1, {side}, true);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankBlockedElsewhere) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{1});
  EXPECT_NE(v.headline.find("comm beef0000"), std::string::npos) << v.headline;
  // Nobody else holds comm beef0000: nothing to say about what rank 1 waits for there.
  EXPECT_EQ(v.headline.find("there it waits"), std::string::npos) << v.headline;
}

TEST(DiagnoseTest, ChainOfWaitsIsNamedByTheRankAtItsEnd) {
  // Ranks 0 and 2 wait in A#3 for rank 1, which waits in B#2 for rank 3, which is in host code.
  // Rank 1 merely waits: the rank that stopped is rank 3, whatever was enqueued first (rank 1's
  // B#2 before the others' A#3).
  Op on_b{kLoss, 1};
  on_b.comm = kOtherComm;
  Job job(4);
  job.ops(0, repeat({kTrain}, 3), true).ops(2, repeat({kTrain}, 3), true);
  job.ops(1, {{kTrain}, on_b, {kTrain}, on_b}, true).ops(3, {on_b});
  job.rank(1).events.back().setEnqueueNs(kT0 + kSec);  // before ranks 0 and 2 enqueue A#3 (2 s)
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankStuckInHost) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{3});
  EXPECT_EQ(v.waiting, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(v.comm_id, kOtherComm);
  EXPECT_EQ(v.seq, 2u);
  EXPECT_EQ(shortFunctionName(v.site.function), "logLoss");
  EXPECT_NE(v.headline.find("rank 3 is alive but stuck in host code: its last NCCL op "
                            "(ncclAllReduce #1 from logLoss() train.cc:40) completed"),
            std::string::npos)
      << v.headline;
  EXPECT_NE(v.headline.find("; rank 1 waits for it in ncclAllReduce #2 on comm beef0000 from "
                            "logLoss() train.cc:40; ranks 0,2 wait for rank 1 in ncclAllReduce "
                            "#3 on comm c0ffee00"),
            std::string::npos)
      << v.headline;
}

TEST(DiagnoseTest, ChainOfWaitsEndingInARankThatLeftNamesIt) {
  Op on_b{kLoss, 1};
  on_b.comm = kOtherComm;
  // "dumping core": a crashed process the launcher saw in uninterruptible sleep (writing its core)
  // crashed; it is not a process that stopped running (the wait-for graph's liveness: crashed
  // before not running).
  for (const auto& [mark, cls] : std::vector<std::pair<std::string, VerdictClass>>{
           {"exited", VerdictClass::kRankExited},
           {"crashed", VerdictClass::kRankCrashed},
           {"dumping core", VerdictClass::kRankCrashed},
           {"stopped", VerdictClass::kRankNotRunning}}) {
    Job job(4);
    job.ops(0, repeat({kTrain}, 3), true).ops(2, repeat({kTrain}, 3), true);
    job.ops(1, {{kTrain}, on_b, {kTrain}, on_b}, true).ops(3, {on_b});
    if (mark == "exited") job.rank(3).exited = true;
    if (mark == "crashed" || mark == "dumping core") job.rank(3).fatal_signal = 11;
    if (mark == "dumping core") job.rank(3).process_state = 'D';
    if (mark == "stopped") job.rank(3).process_state = 'T';
    const Verdict v = job.diagnose();
    EXPECT_EQ(v.cls, cls) << mark << ": " << v.headline;
    EXPECT_EQ(v.ranks, std::vector<int>{3}) << mark << ": " << v.headline;
    EXPECT_NE(v.headline.find("; rank 1 waits for it in ncclAllReduce #2 on comm beef0000"),
              std::string::npos)
        << mark << ": " << v.headline;
  }
}

TEST(DiagnoseTest, SeveralRanksBlockedElsewhereBehindOneRankThatLeftNameIt) {
  // Faultgen seed 10197: rank 0 waits in M#3 for ranks 1 and 2, each blocked in a pair
  // communicator's #3 (P1, P2) for its partner (ranks 3, 4), which exited when its all-reduce on
  // D failed: rank 5, its third member, was killed between calls. Two chains, two ends that only
  // reacted, one rank behind both: rank 5 is the verdict.
  constexpr uint64_t kP1 = 0x1111000000000001, kP2 = 0x2222000000000001, kD = 0xdddd000000000001;
  const auto on = [](uint64_t comm) {
    Op o{kLoss, 4};
    o.comm = comm;
    return o;
  };
  const Op m{kTrain};
  Job job(6);
  job.ops(0, {m, m, m}, true);
  job.ops(1, {m, on(kP1), m, on(kP1), on(kP1)}, true);
  job.ops(2, {m, on(kP2), m, on(kP2), on(kP2)}, true);
  job.ops(3, {on(kP1), on(kD), on(kP1), on(kD), on(kD)});
  job.ops(4, {on(kP2), on(kD), on(kP2), on(kD), on(kD)});
  for (int r : {3, 4}) {
    job.rank(r).events.back().state = EventState::kFailed;
    job.rank(r).events.back().result = 6;  // ncclRemoteError
    job.rank(r).exited = true;
  }
  job.ops(5, {on(kD), on(kD)});
  job.rank(5).fatal_signal = 9;
  for (int r = 0; r < 6; ++r) numberLikeNccl(job.rank(r));
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankCrashed) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{5}) << v.headline;
  EXPECT_NE(v.headline.find("ranks 3-4 then failed"), std::string::npos) << v.headline;
}

TEST(DiagnoseTest, RankBlockedWhereSeveralRanksAreMissingIsBlockedElsewhere) {
  // Rank 1 waits in B#2 for ranks 3 and 4, both in host code: no one rank ends the chain, so the
  // verdict is where rank 1 is blocked, with what it waits for there.
  Op on_b{kLoss, 1};
  on_b.comm = kOtherComm;
  Job job(5);
  job.ops(0, repeat({kTrain}, 3), true).ops(2, repeat({kTrain}, 3), true);
  job.ops(1, {{kTrain}, on_b, {kTrain}, on_b}, true).ops(3, {on_b}).ops(4, {on_b});
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankBlockedElsewhere) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{1});
  EXPECT_NE(v.headline.find("; there it waits for ranks 3-4"), std::string::npos) << v.headline;
}

TEST(DiagnoseTest, ARankBlockedElsewhereForTheRankInHostCodeIsNotNamedWithIt) {
  // Faultgen seed 883: rank 2 waits in A#3 for ranks 0 and 1; rank 0 is in host code; rank 1 went
  // on to B#2, where it waits for rank 0. Only rank 0 stopped of its own accord.
  Op on_b{kLoss, 1};
  on_b.comm = kOtherComm;
  Job job(3);
  job.ops(0, {{kTrain}, on_b, {kTrain}});
  job.ops(1, {{kTrain}, on_b, {kTrain}, on_b}, true);
  job.ops(2, repeat({kTrain}, 3), true);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankStuckInHost) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{0});
  EXPECT_EQ(v.waiting, (std::vector<int>{1, 2}));
}

TEST(DiagnoseTest, RanksBlockedElsewhereThatAllWaitForOneStoppedRankNameIt) {
  // Faultgen seed 767: each step a reduce on A (ranks 0-3; a non-root rank may go on) then an
  // all-reduce on B (ranks 1-3). Rank 0 stalls in host code after two steps; ranks 1 and 2 wait
  // for it in A#3, rank 3 went past A#3 and waits in B#3 for ranks 1 and 2. Seen from B, ranks 1
  // and 2 stopped; both wait for rank 0, which is the one verdict.
  Op reduce{kTrain, 64, OpType::kReduce};
  reduce.root = 1;
  Op on_b{kLoss, 1};
  on_b.comm = kOtherComm;
  Job job(4);
  job.ops(0, {reduce, reduce});
  for (int r = 1; r < 3; ++r) job.ops(r, {reduce, on_b, reduce, on_b, reduce}, true);
  job.ops(3, {reduce, on_b, reduce, on_b, reduce, on_b}, true);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankStuckInHost) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{0});
  EXPECT_EQ(v.waiting, (std::vector<int>{1, 2, 3}));
}

TEST(DiagnoseTest, RanksWaitingInAGroupOrInAReceiveForTheRankInHostCodeAreNotNamedWithIt) {
  // Faultgen seed 9118, reduced: rank 1 waits in W#2 for ranks 0, 2 and 3. Rank 3 sleeps in host
  // code. Rank 0 waits in a group {A#2 with rank 3, which never issued it; B#2 with rank 2, which
  // finished it}: a group ends only when all its ops do, so rank 0 waits for rank 3 (its newest
  // op, B#2, holds it for no one). Rank 2 waits in a receive on B from rank 0. Only rank 3 stopped
  // of its own accord.
  Op on_a{kLoss, 1}, on_b{kPair, 1};
  on_a.comm = kOtherComm;
  on_b.comm = 0xdead0000;
  Op recv{kPair, 16, OpType::kRecv};
  recv.comm = on_b.comm;
  recv.root = 0;  // the peer
  Job job(4);
  job.ops(0, {{kTrain}, on_a, on_b});
  format::EventRecord start;
  start.op = OpType::kGroupStart;
  start.state = EventState::kCompleted;
  job.rank(0).events.push_back(start);
  job.ops(0, {on_a, on_b}, true);
  for (auto it = job.rank(0).events.end() - 2; it != job.rank(0).events.end(); ++it) {
    it->flags |= format::kEventInGroup;
    it->state = EventState::kEnqueued;
    it->setEndNs(0);
  }
  job.ops(1, repeat({kTrain}, 2), true);
  job.ops(2, {{kTrain}, on_b, on_b}).ops(2, {recv}, true);
  job.ops(3, {{kTrain}, on_a});
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankStuckInHost) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{3});
  EXPECT_EQ(v.waiting, (std::vector<int>{0, 1, 2}));
}

TEST(DiagnoseTest, ChainEndingInARankThatOnlyReactedNamesTheRankItLost) {
  // Faultgen seed 813: rank 0 waits in A#2 for rank 1, blocked in B#2 for rank 2; rank 2 exited
  // after its C#2 failed (remote error) because rank 3, its partner there, had returned from main
  // with nothing pending. Rank 2 only reacted: rank 3 is the verdict, the chain its evidence.
  Op on_b{kLoss, 1}, on_c{kPair, 1};
  on_b.comm = kOtherComm;
  on_c.comm = 0xdead0000;
  Job job(4);
  job.ops(0, repeat({kTrain}, 2), true);
  job.ops(1, {{kTrain}, on_b, on_b}, true);
  job.ops(2, {on_b, on_c, on_c});
  job.rank(2).events.back().state = EventState::kFailed;
  job.rank(2).events.back().result = 6;  // ncclRemoteError
  job.rank(2).exited = true;
  job.ops(3, {on_c});
  job.rank(3).exited = true;
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankExited) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{3});
  EXPECT_NE(v.headline.find("; rank 1 waits for rank 2 in ncclAllReduce #2 on comm beef0000"),
            std::string::npos)
      << v.headline;
}

TEST(DiagnoseTest, BranchesOfAChainThatMeetAtOneStoppedRankNameIt) {
  // Faultgen seed 796: rank 1 waits in B#2 for ranks 3 and 4; rank 4 waits in C#2 for rank 3,
  // which is in host code. Every branch ends at rank 3.
  Op on_b{kLoss, 1}, on_c{kPair, 1};
  on_b.comm = kOtherComm;
  on_c.comm = 0xdead0000;
  Job job(5);
  job.ops(0, repeat({kTrain}, 3), true).ops(2, repeat({kTrain}, 3), true);
  job.ops(1, {{kTrain}, on_b, {kTrain}, on_b}, true);
  job.ops(3, {on_b, on_c});
  job.ops(4, {on_b, on_c, on_c}, true);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankStuckInHost) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{3});
  EXPECT_EQ(v.waiting, (std::vector<int>{0, 1, 2, 4}));
  EXPECT_NE(v.headline.find("; rank 1 waits for it in ncclAllReduce #2 on comm beef0000"),
            std::string::npos)
      << v.headline;
}

TEST(DiagnoseTest, ChainEndingInSeveralStoppedRanksNamesTheOneThatLeftOnItsOwn) {
  // Faultgen seed 1712: rank 3 waits in B#2 for rank 4, which waits in the broadcast W#2 for
  // ranks 0-2. Rank 0 was killed; ranks 1 and 2 failed their C#2 with it (remote error) and
  // exited. Three ranks stopped at the chain's end, two only reacted: rank 0 is the verdict.
  Op w{kTrain, 64, OpType::kBroadcast}, on_b{kLoss, 1}, on_c{kPair, 1};
  w.root = 4;
  on_b.comm = kOtherComm;
  on_c.comm = 0xdead0000;
  Job job(5);
  job.ops(0, {w, on_c});
  job.rank(0).fatal_signal = 9;
  for (int r : {1, 2}) {
    job.ops(r, {w, on_c, on_c});
    job.rank(r).events.back().state = EventState::kFailed;
    job.rank(r).events.back().result = 6;  // ncclRemoteError
    job.rank(r).exited = true;
  }
  job.ops(3, {w, on_b, w, on_b}, true);  // a non-root: its W#2 completed
  job.ops(4, {w, on_b, w}, true);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankCrashed) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{0}) << v.headline;
}

}  // namespace
}  // namespace ncclrec::analyzer
