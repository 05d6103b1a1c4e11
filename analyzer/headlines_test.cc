// The op-order headlines (headlines.h): each kind of "instead" in words, and the mismatch classes.
#include "analyzer/headlines.h"

#include <gtest/gtest.h>

namespace ncclrec::analyzer {
namespace {

using format::OpType;

CallSite at(const std::string& function, int line) {
  CallSite s;
  s.function = function;
  s.file = "/src/train.cc";
  s.line = line;
  s.frames.resize(1);  // known
  return s;
}

// rank 3 with ncclAllReduce #6 on comm c0ffee00 from logLoss() train.cc:40.
Verdict verdictOf(VerdictClass cls, std::vector<int> ranks) {
  Verdict v;
  v.cls = cls;
  v.ranks = std::move(ranks);
  v.comm_id = 0xc0ffee0000000001ull;
  v.op = OpType::kAllReduce;
  v.seq = 6;
  v.site = at("logLoss", 40);
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
                                      opOf(OpType::kBroadcast, 6, at("trainStep", 27)))),
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
  const EvidenceOp bcast = opOf(OpType::kBroadcast, 6, at("trainStep", 27));
  EXPECT_EQ(skippedHeadline(one, Instead::of(Instead::Kind::kCulpritsIssued, {0, 1, 2}, bcast)),
            head + "it issued ncclBroadcast from trainStep() train.cc:27 instead");
  EXPECT_EQ(skippedHeadline(verdictOf(VerdictClass::kSkippedCollective, {2, 3}),
                            Instead::of(Instead::Kind::kCulpritsIssued, {0, 1}, bcast)),
            "ranks 2-3 skipped ncclAllReduce #6 on comm c0ffee00 from logLoss() train.cc:40 that "
            "ranks 0-1 issued; they issued ncclBroadcast from trainStep() train.cc:27 instead");
  EXPECT_EQ(skippedHeadline(one, Instead::of(Instead::Kind::kCulpritWentOnToP2p, {0, 1, 2},
                                             opOf(OpType::kSend, 2, at("exchangeHalo", 12)), 1)),
            head +
                "it went on to ncclSend #2 with rank 1 from exchangeHalo() train.cc:12, which its "
                "peers reach only after it");
}

TEST(HeadlinesTest, AWaitCycleSaysWhereTheCulpritWaitsAndForWhom) {
  Instead instead = Instead::of(Instead::Kind::kBeforeTheirs, {1, 2},
                                opOf(OpType::kBroadcast, 3, at("trainStep", 27)));
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
  const CallSite site = at("logLoss", 40);
  const EvidenceOp theirs = opOf(OpType::kAllReduce, 6, site);
  EvidenceOp mine = theirs;
  EXPECT_EQ(mismatchOf(mine, theirs), VerdictClass::kNoHang);
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
  mine.site = at("trainStep", 27);
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
  stop.waited_site = at("logLoss", 40);
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
  stop.why = "its process is stopped (SIGSTOP or a debugger)";
  stop.others = {0};
  stop.others_failed = true;
  stop.result = 6;
  EXPECT_EQ(stopHeadline(v, stop),
            "rank 3 stopped running between ops, after 99 all-reduces from logLoss(): its process "
            "is stopped (SIGSTOP or a debugger); rank 0 failed in their 100th (NCCL error 6)");
}

}  // namespace
}  // namespace ncclrec::analyzer
