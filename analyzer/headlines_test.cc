// The headlines of headlines.h: each kind of "instead" of the op-order verdicts in words, the
// mismatch classes, a stream that stopped, the sends and receives that do not pair, a rank gone
// from a send or receive or before its peers' calls failed, the communicator calls,
// and a deadlock across communicators.
#include "analyzer/headlines.h"

#include <gtest/gtest.h>

#include "analyzer/testing/call_site.h"

namespace ncclrec::analyzer {
namespace {

using format::OpType;

using testing::trainAt;

// rank 3 with ncclAllReduce #6 on comm c0ffee00 from logLoss() train.cc:40.
Verdict verdictOf(VerdictClass cls, std::vector<int> ranks) {
  Verdict v;
  v.cls = cls;
  v.ranks = std::move(ranks);
  v.comm_id = 0xc0ffee0000000001ull;
  v.op = OpType::kAllReduce;
  v.seq = 6;
  v.site = trainAt("logLoss", 40);
  return v;
}

EvidenceOp opOf(OpType op, uint64_t seq, const CallSite& site) {
  EvidenceOp o;
  o.op = op;
  o.seq = seq;
  o.count = 4096;
  o.dtype = 7;  // float32
  o.site = site;
  return o;
}

TEST(HeadlinesTest, AloneSaysWhatTheOthersDidInstead) {
  const Verdict v = verdictOf(VerdictClass::kRankGatedCollective, {0});
  const std::vector<int> all = {0, 1, 2, 3}, others = {1, 2, 3};
  const std::string head =
      "rank 0 alone (rank == 0) issued ncclAllReduce #6 on comm c0ffee00 from logLoss() "
      "train.cc:40; ranks 1-3 ";
  EXPECT_EQ(aloneHeadline(v, all,
                          Instead::of(Instead::Kind::kOthersIssued, others,
                                      opOf(OpType::kBroadcast, 6, trainAt("trainStep", 27)))),
            head + "issued ncclBroadcast from trainStep() train.cc:27 as their #6");
  EXPECT_EQ(aloneHeadline(v, all, Instead::of(Instead::Kind::kOthersIssuedNone, others)),
            head + "issued no collective there");
  EXPECT_EQ(aloneHeadline(v, all, Instead::of(Instead::Kind::kOthersWentNoFurther, others)),
            head + "issued no collective there after #5 and went no further on it");
  EXPECT_EQ(aloneHeadline(v, {}, Instead::of(Instead::Kind::kOthersNeverUsedIt, others)),
            "rank 0 alone issued ncclAllReduce #6 on comm c0ffee00 from logLoss() train.cc:40; "
            "ranks 1-3 never issued a collective on it (one destroyed it when done)");
}

TEST(HeadlinesTest, SkippedSaysWhatTheCulpritsDidInstead) {
  const Verdict one = verdictOf(VerdictClass::kSkippedCollective, {3});
  const std::string head =
      "rank 3 skipped ncclAllReduce #6 on comm c0ffee00 from logLoss() train.cc:40 that ranks 0-2 "
      "issued; ";
  const EvidenceOp bcast = opOf(OpType::kBroadcast, 6, trainAt("trainStep", 27));
  EXPECT_EQ(skippedHeadline(one, Instead::of(Instead::Kind::kCulpritsIssued, {0, 1, 2}, bcast)),
            head + "it issued ncclBroadcast from trainStep() train.cc:27 instead");
  EXPECT_EQ(skippedHeadline(verdictOf(VerdictClass::kSkippedCollective, {2, 3}),
                            Instead::of(Instead::Kind::kCulpritsIssued, {0, 1}, bcast)),
            "ranks 2-3 skipped ncclAllReduce #6 on comm c0ffee00 from logLoss() train.cc:40 that "
            "ranks 0-1 issued; they issued ncclBroadcast from trainStep() train.cc:27 instead");
  EXPECT_EQ(
      skippedHeadline(one, Instead::of(Instead::Kind::kCulpritWentOnToP2p, {0, 1, 2},
                                       opOf(OpType::kSend, 2, trainAt("exchangeHalo", 12)), 1)),
      head +
          "it went on to ncclSend #2 with rank 1 from exchangeHalo() train.cc:12, which its "
          "peers reach only after it");
}

TEST(HeadlinesTest, AWaitCycleSaysWhereTheCulpritWaitsAndForWhom) {
  Instead instead = Instead::of(Instead::Kind::kBeforeTheirs, {1, 2},
                                opOf(OpType::kBroadcast, 3, trainAt("trainStep", 27)));
  instead.comm_id = 0xbeef000000000002ull;
  instead.waits_for = {1, 2};
  instead.they_wait_for_it = true;
  EXPECT_EQ(aloneHeadline(verdictOf(VerdictClass::kRankGatedCollective, {0}), {}, instead),
            "rank 0 alone issued ncclAllReduce #6 on comm c0ffee00 from logLoss() train.cc:40 "
            "before ncclBroadcast #3 on comm beef0000 from trainStep() train.cc:27 that ranks 1-2 "
            "issued; there it waits in ncclAllReduce #6 on comm c0ffee00 from logLoss() "
            "train.cc:40 for ranks 1-2, which wait for it on comm beef0000");
  instead.kind = Instead::Kind::kOrPutOff;
  instead.waits_for = {1};
  instead.they_wait_for_it = false;
  EXPECT_EQ(skippedHeadline(verdictOf(VerdictClass::kSkippedCollective, {0}), instead),
            "rank 0 skipped ncclAllReduce #6 on comm c0ffee00 from logLoss() train.cc:40 that "
            "ranks 1-2 issued, or put it off: it waits in ncclBroadcast #3 on comm beef0000 from "
            "trainStep() train.cc:27 for rank 1");
}

TEST(HeadlinesTest, AMismatchNamesTheFirstArgumentThatDiffers) {
  const CallSite site = trainAt("logLoss", 40);
  const EvidenceOp theirs = opOf(OpType::kAllReduce, 6, site);
  EvidenceOp mine = theirs;
  EXPECT_EQ(mismatchOf(mine, theirs), std::nullopt);
  mine.redop = 2;
  EXPECT_EQ(mismatchOf(mine, theirs), VerdictClass::kRedopMismatch);
  mine.dtype = 2;
  EXPECT_EQ(mismatchOf(mine, theirs), VerdictClass::kDtypeMismatch);
  mine.count = 64;
  EXPECT_EQ(mismatchOf(mine, theirs), VerdictClass::kSizeMismatch);
  Verdict v = verdictOf(VerdictClass::kSizeMismatch, {3});
  const Instead instead = Instead::of(Instead::Kind::kOthersPassed, {0, 1, 2}, theirs);
  EXPECT_EQ(mismatchHeadline(v, mine, instead, true),
            "ncclAllReduce #6 on comm c0ffee00: rank 3 passes count 64, ranks 0-2 pass 4096 "
            "(float32) (logLoss() train.cc:40)");
  mine.op = OpType::kBroadcast;
  mine.site = trainAt("trainStep", 27);
  EXPECT_EQ(mismatchOf(mine, theirs), VerdictClass::kOpMismatch);
  v.cls = VerdictClass::kOpMismatch;
  EXPECT_EQ(mismatchHeadline(v, mine, instead, false),
            "ncclAllReduce #6 on comm c0ffee00: rank 3 issued ncclBroadcast, ranks 0-2 issued "
            "ncclAllReduce (trainStep() train.cc:27 vs logLoss() train.cc:40)");
  EvidenceOp root0 = opOf(OpType::kBroadcast, 6, site), root1 = root0;
  root0.root = 0;
  root1.root = 1;
  EXPECT_EQ(mismatchOf(root1, root0), VerdictClass::kRootMismatch);
}

TEST(HeadlinesTest, AStopSaysHowTheCulpritsStoppedAndWhereTheOthersAre) {
  const Verdict v = verdictOf(VerdictClass::kRankExited, {3});
  Stop stop;
  stop.same = 99;
  stop.waited_site = trainAt("logLoss", 40);
  stop.others = {0, 1, 2};
  const std::string after = " after 99 all-reduces from logLoss(); ranks 0-2 are in their 100th";
  EXPECT_EQ(stopHeadline(v, stop), "rank 3 exited" + after);
  stop.how = Stop::How::kCrashed;
  stop.signal = 11;
  EXPECT_EQ(stopHeadline(v, stop), "rank 3 crashed (SIGSEGV)" + after);
  stop.how = Stop::How::kDiedUnseen;
  EXPECT_EQ(stopHeadline(v, stop),
            "rank 3 died without an exit mark (the connection to it broke: killed, e.g. SIGKILL "
            "or out of memory)" +
                after);
  stop.how = Stop::How::kDiedSilent;
  stop.silent_ns = 2'300'000'000;
  EXPECT_EQ(stopHeadline(v, stop),
            "rank 3 died without an exit mark (heartbeat stopped 2.3s before the newest "
            "recording: killed, e.g. SIGKILL or out of memory)" +
                after);
  stop.how = Stop::How::kNotRunning;
  stop.why.process_state = 'T';
  stop.others = {0};
  stop.others_failed = true;
  stop.result = 6;
  EXPECT_EQ(stopHeadline(v, stop),
            "rank 3 stopped running between ops, after 99 all-reduces from logLoss(): its process "
            "is stopped (SIGSTOP, a debugger or a job-control stop); rank 0 failed in their 100th "
            "(NCCL error 6)");
}

// rank 1 waits in ncclRecv #4 from rank 2 on comm c0ffee00 from recvActivations() train.cc:50.
Verdict p2pWait() {
  Verdict v = verdictOf(VerdictClass::kP2pMismatch, {1});
  v.op = OpType::kRecv;
  v.seq = 4;
  v.site = trainAt("recvActivations", 50);
  return v;
}

TEST(HeadlinesTest, AWaitWithNoCounterpartSaysWhatThePeerPosted) {
  const std::string head =
      "rank 1's ncclRecv #4 from rank 2 on comm c0ffee00 from recvActivations() train.cc:50 has "
      "no matching ncclSend: rank 2 posted ";
  EXPECT_EQ(p2pUnmatchedHeadline(p2pWait(), 2, {}), head + "0 ncclSends to rank 1");
  EXPECT_EQ(p2pUnmatchedHeadline(p2pWait(), 2, {3, 9, trainAt("sendActivations", 61)}),
            head + "3 ncclSends to rank 1 (the last, #9, from sendActivations() train.cc:61)");
  Verdict send = p2pWait();
  send.op = OpType::kSend;
  EXPECT_EQ(p2pUnmatchedHeadline(send, 2, {}),
            "rank 1's ncclSend #4 to rank 2 on comm c0ffee00 from recvActivations() train.cc:50 "
            "has no matching ncclRecv: rank 2 posted 0 ncclRecvs from rank 1");
}

TEST(HeadlinesTest, APairThatMovesDifferentCountsNamesBoth) {
  EvidenceOp mine = opOf(OpType::kRecv, 4, trainAt("recvActivations", 50));
  EvidenceOp theirs = opOf(OpType::kSend, 4, trainAt("sendActivations", 61));
  theirs.count = 64;
  EXPECT_EQ(p2pCountHeadline(p2pWait(), 2, mine, theirs),
            "rank 1's ncclRecv #4 from rank 2 on comm c0ffee00 from recvActivations() train.cc:50 "
            "moves 4096 float32; rank 2's matching ncclSend from sendActivations() train.cc:61 "
            "moves 64 float32");
  Verdict v = verdictOf(VerdictClass::kP2pMismatch, {2});
  v.op = OpType::kSend;
  v.site = trainAt("pipelineLoop", 70);
  const uint64_t comm = v.comm_id;
  EXPECT_EQ(p2pShortRunHeadline(v, {theirs, comm}, {mine, comm}),
            "rank 2 posted one ncclSend fewer from pipelineLoop() train.cc:70 than its loop does, "
            "so its next, ncclSend #4 on comm c0ffee00 from sendActivations() train.cc:61 (64 "
            "float32), met ncclRecv #4 on comm c0ffee00 from recvActivations() train.cc:50 (4096 "
            "float32)");
}

TEST(HeadlinesTest, TheSideThatPostedFewerIsCounted) {
  Verdict v = verdictOf(VerdictClass::kP2pMismatch, {2});
  v.op = OpType::kSend;
  v.seq = 3;
  v.site = trainAt("sendActivations", 61);
  EXPECT_EQ(p2pRelayHeadline(v, 6, {0, 1}, 3, {2, 2, v.site}),
            "rank 2 completed 6 ncclRecvs from ranks 0-1 but posted 2 ncclSends to rank 3 on comm "
            "c0ffee00 (the last, #2, from sendActivations() train.cc:61)");
  // The dropped send is of the role that paired with the waiter's receives, not the last sent.
  EXPECT_EQ(p2pRelayHeadline(v, 6, {0, 1}, 3, {2, 2, trainAt("sendHalo", 40)},
                             trainAt("recvActivations", 50)),
            "rank 2 completed 6 ncclRecvs from ranks 0-1 but posted 2 ncclSends to rank 3 on comm "
            "c0ffee00 (those for recvActivations() train.cc:50 from sendActivations() "
            "train.cc:61)");
  P2pShortfall s;
  s.waiter = 1;
  s.posted = {2, 7, v.site};
  s.waited = 3;
  EXPECT_EQ(p2pShortfallHeadline(v, s),
            "rank 2 posted 2 ncclSends to rank 1 on comm c0ffee00 (the last, #7, from "
            "sendActivations() train.cc:61) but rank 1 posted 3 ncclRecvs from it");
  s.by_role = true;
  s.paired_with = trainAt("recvActivations", 50);
  s.others_moved = 3;
  v.op = OpType::kRecv;
  EXPECT_EQ(p2pShortfallHeadline(v, s),
            "rank 2 posted 2 ncclRecvs from rank 1 on comm c0ffee00 (those for recvActivations() "
            "train.cc:50 from sendActivations() train.cc:61) but rank 1 posted 3 ncclSends to it "
            "(the other pairs of the communicator moved up to 3)");
}

LastOp lastBroadcast() {
  LastOp last;
  last.any = true;
  last.op = opOf(OpType::kBroadcast, 2, trainAt("main", 52));
  last.completed = true;
  last.ago_ns = 2'300'000'000;
  return last;
}

TEST(HeadlinesTest, ARanksLastOpIsToldWithWhenItCompleted) {
  EXPECT_EQ(lastOpPhrase({}), "its last NCCL op never came");
  LastOp last = lastBroadcast();
  EXPECT_EQ(lastOpPhrase(last),
            "its last NCCL op (ncclBroadcast #2 from main() train.cc:52) completed 2.3s ago");
  last.completed = false;
  EXPECT_EQ(lastOpPhrase(last), "its last NCCL op (ncclBroadcast #2 from main() train.cc:52)");
}

TEST(HeadlinesTest, APeerGoneFromASendOrReceiveSaysHowAndWhoWaits) {
  Verdict v = verdictOf(VerdictClass::kRankExited, {2});
  v.op = OpType::kRecv;
  v.seq = 4;
  Gone gone;
  gone.last = lastBroadcast();
  const std::string last =
      ": its last NCCL op (ncclBroadcast #2 from main() train.cc:52) completed 2.3s ago; rank 1 ";
  const std::string waited =
      "in its ncclRecv #4 from rank 2 on comm c0ffee00 from recvActivations() train.cc:50";
  const CallSite site = trainAt("recvActivations", 50);
  EXPECT_EQ(peerGoneHeadline(v, gone, 1, site, false, 0),
            "rank 2 exited without ending the communicator" + last + "waits " + waited);
  gone.how = Gone::How::kCrashed;
  gone.signal = 11;
  EXPECT_EQ(peerGoneHeadline(v, gone, 1, site, true, 6),
            "rank 2 crashed (SIGSEGV)" + last + "failed " + waited + " (NCCL error 6)");
  gone.how = Gone::How::kDied;
  EXPECT_EQ(peerGoneHeadline(v, gone, 1, site, false, 0),
            "rank 2 died without an exit mark (killed, e.g. SIGKILL or out of memory)" + last +
                "waits " + waited);
  gone.how = Gone::How::kInHost;
  EXPECT_EQ(peerGoneHeadline(v, gone, 1, site, false, 0),
            "rank 2 is alive but stuck in host code" + last + "waits " + waited);
}

TEST(HeadlinesTest, ARankThatLeftFirstNamesTheCallThatFailedForIt) {
  Verdict v = verdictOf(VerdictClass::kRankCrashed, {2});
  Gone gone;
  gone.how = Gone::How::kDied;
  EXPECT_EQ(leftFirstHeadline(v, gone, {0, 1, 3}, 6),
            "rank 2 died without an exit mark with nothing pending: its last NCCL op never came; "
            "ranks 0-1,3 then failed (NCCL error 6: the peer was gone), ncclAllReduce #6 on comm "
            "c0ffee00 first");
  v.seq = 0;
  v.op = OpType::kCommDestroy;
  gone.how = Gone::How::kExited;
  EXPECT_EQ(leftFirstHeadline(v, gone, {0}, 6),
            "rank 2 exited with nothing pending: its last NCCL op never came; rank 0 then failed "
            "(NCCL error 6: the peer was gone), ncclCommDestroy on comm c0ffee00 first");
}

TEST(HeadlinesTest, AnEarlyEndSaysWhatTheRankDidAroundItAndHowTheOthersStand) {
  Verdict v = verdictOf(VerdictClass::kCommDestroyed, {1});
  v.op = OpType::kCommDestroy;
  v.site = trainAt("shutdown", 90);
  CommEnd end;
  end.others = {0, 2};
  end.theirs = {opOf(OpType::kAllReduce, 5, trainAt("logLoss", 40)), v.comm_id};
  end.theirs.op.state = format::EventState::kStarted;
  const std::string head =
      "rank 1 destroyed comm c0ffee00 (ncclCommDestroy from shutdown() train.cc:90) ";
  const std::string theirs =
      "; ranks 0,2 issued ncclAllReduce #5 from logLoss() train.cc:40 on it ";
  EXPECT_EQ(commEndHeadline(v, end),
            head + "before any collective on it" + theirs + "and wait in it");
  end.last = OpOn{opOf(OpType::kAllReduce, 4, trainAt("logLoss", 40)), v.comm_id};
  end.went_on = OpOn{opOf(OpType::kAllReduce, 9, trainAt("trainStep", 27)), 0xbeef000000000002ull};
  end.theirs.op.state = format::EventState::kFailed;
  end.theirs.op.result = 6;
  EXPECT_EQ(commEndHeadline(v, end),
            head +
                "after its ncclAllReduce #4 from logLoss() train.cc:40 and went on (ncclAllReduce "
                "on comm beef0000 from trainStep() train.cc:27)" +
                theirs + "and failed in it (NCCL error 6)");
  v.op = OpType::kCommAbort;
  end = {};
  end.others = {0};
  end.theirs = {opOf(OpType::kCommSplit, 0, trainAt("makeGroups", 12)), v.comm_id};
  end.theirs.op.state = format::EventState::kCompleted;
  EXPECT_EQ(commEndHeadline(v, end),
            "rank 1 aborted comm c0ffee00 (ncclCommAbort from shutdown() train.cc:90) before any "
            "collective on it; rank 0 issued ncclCommSplit on comm c0ffee00 from makeGroups() "
            "train.cc:12 on it and completed it without that rank");
}

TEST(HeadlinesTest, ASplitNotEveryMemberCalledNamesTheFewerSide) {
  Verdict v = verdictOf(VerdictClass::kSkippedCollective, {3});
  v.op = OpType::kCommSplit;
  v.site = trainAt("makeGroups", 12);
  SplitTaken s{{0, 1, 2},
               {3},
               {0, 1, 2, 3},
               4,
               {opOf(OpType::kAllReduce, 5, trainAt("logLoss", 40)), v.comm_id}};
  EXPECT_EQ(partialSplitHeadline(v, s),
            "rank 3 skipped ncclCommSplit of comm c0ffee00 from makeGroups() train.cc:12 that "
            "ranks 0-2 called after collective #4; it issued ncclAllReduce #5 from logLoss() "
            "train.cc:40 instead");
  v.cls = VerdictClass::kRankGatedCollective;
  s = {{0}, {1, 2, 3}, {0, 1, 2, 3}, 0, s.instead};
  EXPECT_EQ(partialSplitHeadline(v, s),
            "rank 0 alone (rank == 0) called ncclCommSplit of comm c0ffee00 from makeGroups() "
            "train.cc:12; ranks 1-3 issued ncclAllReduce #5 from logLoss() train.cc:40 instead");
}

TEST(HeadlinesTest, AGroupThatLeftAPeerOutSaysWhoItPostsToAndWhatThePeerWaitsIn) {
  Verdict v = verdictOf(VerdictClass::kP2pMismatch, {2});
  v.op = OpType::kRecv;
  v.seq = 4;
  v.site = trainAt("exchangeHalo", 31);
  GroupLeftOut g;
  g.left = 1;
  g.group = 4;
  g.posts_to = {0};
  g.waits = {opOf(OpType::kRecv, 4, {}), opOf(OpType::kSend, 4, {})};
  EXPECT_EQ(groupLeftOutHeadline(v, g),
            "rank 2 left rank 1 out of its grouped sends and receives #4 on comm c0ffee00 from "
            "exchangeHalo() train.cc:31: that group posts to rank 0 only, while rank 1's group #4 "
            "waits in ncclRecv #4 from rank 2 and ncclSend #4 to rank 2");
}

TEST(HeadlinesTest, ADeadlockWalksItsCycle) {
  Verdict v = verdictOf(VerdictClass::kCrossCommDeadlock, {0, 1});
  const std::vector<CycleStep> cycle = {
      {0, {opOf(OpType::kAllReduce, 3, trainAt("logLoss", 40)), v.comm_id}, 1},
      {1, {opOf(OpType::kBroadcast, 2, trainAt("syncWeights", 22)), 0xbeef000000000002ull}, 0}};
  EXPECT_EQ(deadlockHeadline(v, cycle),
            "ranks 0-1 deadlock across communicators: rank 0 waits in ncclAllReduce #3 on comm "
            "c0ffee00 from logLoss() train.cc:40 for rank 1, which waits in ncclBroadcast #2 on "
            "comm beef0000 from syncWeights() train.cc:22 for rank 0");
}

}  // namespace
}  // namespace ncclrec::analyzer
