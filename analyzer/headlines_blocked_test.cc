// The headlines of headlines_blocked.h: a rank whose own call failed, one still inside an op its
// peers got through, one blocked in another communicator and where that one waits, one in host
// code, and the end of a chain of waits, in words.
#include "analyzer/headlines_blocked.h"

#include <gtest/gtest.h>

#include "analyzer/testing/call_site.h"

namespace ncclrec::analyzer {
namespace {

using format::OpType;

constexpr uint64_t kWorld = 0xc0ffee0000000001ull;
constexpr uint64_t kPair = 0xbeef000000000002ull;

using testing::trainAt;

OpOn opOn(OpType op, uint64_t seq, uint64_t comm, CallSite site = {}) {
  EvidenceOp o;
  o.op = op;
  o.seq = seq;
  o.site = std::move(site);
  return {o, comm};
}

// Rank 3's stream of the world communicator stopped; the verdict's op and call site as each
// rule sets them.
Verdict stopped(std::vector<int> ranks, OpType op, uint64_t seq, CallSite site) {
  Verdict v;
  v.ranks = std::move(ranks);
  v.comm_id = kWorld;
  v.op = op;
  v.seq = seq;
  v.site = std::move(site);
  return v;
}

const Waiters kWaiters{{0, 1, 2}, OpType::kAllReduce, 6, false};

LastOp lastBroadcast() {
  LastOp last;
  last.any = true;
  last.op = opOn(OpType::kBroadcast, 2, 0, trainAt("main", 52)).op;
  last.completed = true;
  last.ago_ns = 2'300'000'000;
  return last;
}
const std::string kLast =
    "its last NCCL op (ncclBroadcast #2 from main() train.cc:52) completed "
    "2.3s ago";

TEST(BlockedHeadlinesTest, AFailedCallOfItsOwnSaysTheErrorAndWhatFollowed) {
  const Verdict v = stopped({3}, OpType::kAllReduce, 6, trainAt("logLoss", 40));
  OwnError e;
  e.comm_id = kWorld;
  e.result = 4;
  e.then = OwnError::Then::kExited;
  EXPECT_EQ(ownErrorHeadline(v, e, kWaiters),
            "rank 3: ncclAllReduce on comm c0ffee00 from logLoss() train.cc:40 returned NCCL "
            "error 4 (invalid argument), then it exited; ranks 0-2 wait for it in ncclAllReduce "
            "#6");
  e.comm_id = 0;
  e.result = 5;
  e.then = OwnError::Then::kNothingSince;
  Waiters failed{{1}, OpType::kAllReduce, 6, true};
  EXPECT_EQ(ownErrorHeadline(v, e, failed),
            "rank 3: ncclAllReduce from logLoss() train.cc:40 returned NCCL error 5 (invalid "
            "usage), and it issued nothing since; rank 1 failed in ncclAllReduce #6");
  e.result = 3;
  e.then = OwnError::Then::kNotRunning;
  EXPECT_EQ(ownErrorHeadline(v, e, {{1}, OpType::kAllReduce, 6, false}),
            "rank 3: ncclAllReduce from logLoss() train.cc:40 returned NCCL error 3, then it "
            "stopped running; rank 1 waits for it in ncclAllReduce #6");
  e.then = OwnError::Then::kDied;
  EXPECT_NE(ownErrorHeadline(v, e, kWaiters).find("error 3, then it died; ranks 0-2 wait"),
            std::string::npos);
}

TEST(BlockedHeadlinesTest, StillInsideNamesTheOpItsPeersGotThrough) {
  Verdict v = stopped({}, OpType::kAllReduce, 6, trainAt("trainStep", 33));
  EXPECT_EQ(stillInsideHeadline(v, {3}, {{0, 1, 2}, OpType::kAllReduce, 7, false}),
            "rank 3 waits in ncclAllReduce #6 on comm c0ffee00 from trainStep() train.cc:33, "
            "which ranks 0-2 got through: they wait in ncclAllReduce #7; the ranks agree on every "
            "op before it");
  EXPECT_EQ(stillInsideHeadline(v, {2, 3}, {{1}, OpType::kAllReduce, 7, false}),
            "ranks 2-3 wait in ncclAllReduce #6 on comm c0ffee00 from trainStep() train.cc:33, "
            "which rank 1 got through: it waits in ncclAllReduce #7; the ranks agree on every op "
            "before it");
  EXPECT_EQ(stillInsideMissing(v, {2, 3}),
            "ranks 2-3 are inside ncclAllReduce #6, not in host code, and its peers finished it: "
            "the transport or the device is stuck, not the program's order; NCCL's profiler "
            "plugin (NCCLREC_COMPLETION=profiler) would name the connection from its transport "
            "counters");
}

TEST(BlockedHeadlinesTest, BlockedElsewhereSaysWhereAndForWhomItWaitsThere) {
  const Verdict v = stopped({3}, OpType::kAllReduce, 6, trainAt("pairReduce", 61));
  const OpOn pair = opOn(OpType::kAllReduce, 3, kPair, trainAt("pairReduce", 61));
  const std::string head =
      "rank 3 is blocked in ncclAllReduce #3 on comm beef0000 from pairReduce() train.cc:61 while "
      "ranks 0-2 wait for it in ncclAllReduce #6 on comm c0ffee00";
  ThereWaitsFor there;
  EXPECT_EQ(thereWaitsForPhrase(there), "");
  EXPECT_EQ(blockedElsewhereHeadline(v, pair, kWaiters, there), head);
  there.how = ThereWaitsFor::How::kSeveral;
  there.ranks = {1, 2};
  EXPECT_EQ(thereWaitsForPhrase(there), "; there it waits for ranks 1-2");
  there.ranks = {2};
  there.how = ThereWaitsFor::How::kExited;
  EXPECT_EQ(thereWaitsForPhrase(there), "; there it waits for rank 2, which exited");
  there.how = ThereWaitsFor::How::kCrashed;
  there.signal = 11;
  EXPECT_EQ(thereWaitsForPhrase(there), "; there it waits for rank 2, which crashed (SIGSEGV)");
  there.how = ThereWaitsFor::How::kDied;
  EXPECT_EQ(thereWaitsForPhrase(there),
            "; there it waits for rank 2, which died without an exit mark");
  there.how = ThereWaitsFor::How::kBlocked;
  there.blocked_in = opOn(OpType::kBroadcast, 9, kWorld);
  EXPECT_EQ(thereWaitsForPhrase(there),
            "; there it waits for rank 2, itself blocked in ncclBroadcast #9 on comm c0ffee00");
  there.how = ThereWaitsFor::How::kInHost;
  there.last = lastBroadcast();
  EXPECT_EQ(blockedElsewhereHeadline(v, pair, kWaiters, there),
            head + "; there it waits for rank 2, in host code: " + kLast);
  EXPECT_EQ(blockedElsewhereHeadline(stopped({2, 3}, OpType::kAllReduce, 6, {}), pair,
                                     {{1}, OpType::kAllReduce, 6, false}, {}),
            "ranks 2-3 are blocked in ncclAllReduce #3 on comm beef0000 from unknown call site "
            "while rank 1 "
            "waits for them in ncclAllReduce #6 on comm c0ffee00");
}

TEST(BlockedHeadlinesTest, StuckInHostToldWithItsLastOp) {
  EXPECT_EQ(
      stuckInHostHeadline(stopped({3}, OpType::kAllReduce, 6, {}), lastBroadcast(), kWaiters),
      "rank 3 is alive but stuck in host code: " + kLast + "; ranks 0-2 wait in ncclAllReduce #6");
  EXPECT_EQ(stuckInHostHeadline(stopped({2, 3}, OpType::kAllReduce, 6, {}), LastOp{},
                                {{1}, OpType::kAllReduce, 6, false}),
            "ranks 2-3 are alive but stuck in host code: its last NCCL op never came; rank 1 "
            "waits in ncclAllReduce #6");
}

TEST(BlockedHeadlinesTest, AChainIsToldFromItsEndOutward) {
  // Rank 3 (stream 7) waits for rank 2 (stream 5) on the pair, which waits for rank 1 (stream 4),
  // where the chain ends; ranks 0,4 wait for rank 3 in the world's #6.
  const std::vector<ChainStep> links = {
      {3, opOn(OpType::kAllReduce, 3, kPair, trainAt("pairReduce", 61)), 5, 2},
      {2, opOn(OpType::kBroadcast, 2, kWorld, trainAt("syncMetrics", 70)), 4, 1}};
  const OpOn outer = opOn(OpType::kAllReduce, 6, kWorld, trainAt("trainStep", 40));
  const std::string chain = chainPhrase(links, 4, {0, 4}, {3}, outer);
  EXPECT_EQ(chain,
            "; rank 2 waits for it in ncclBroadcast #2 on comm c0ffee00 from syncMetrics() "
            "train.cc:70; rank 3 waits for rank 2 in ncclAllReduce #3 on comm beef0000 from "
            "pairReduce() train.cc:61; ranks 0,4 wait for rank 3 in ncclAllReduce #6 on comm "
            "c0ffee00 from trainStep() train.cc:40");
  // No culprit on the chain (a cause replaced it): every link names its rank.
  EXPECT_EQ(chainPhrase(links, SIZE_MAX, {0, 4}, {3}, outer).substr(0, 30),
            "; rank 2 waits for rank 1 in n");

  const Verdict v = stopped({1}, OpType::kBroadcast, 2, trainAt("main", 52));
  ChainEnd end;
  end.last = lastBroadcast();
  EXPECT_EQ(chainEndHeadline(v, end, chain),
            "rank 1 is alive but stuck in host code: " + kLast + chain);
  end.how = ChainEnd::How::kExited;
  EXPECT_EQ(chainEndHeadline(v, end, ""), "rank 1 exited: " + kLast);
  end.how = ChainEnd::How::kCrashed;
  end.signal = 9;
  EXPECT_EQ(chainEndHeadline(v, end, ""), "rank 1 crashed (SIGKILL): " + kLast);
  end.how = ChainEnd::How::kDied;
  EXPECT_EQ(chainEndHeadline(v, end, ""),
            "rank 1 died without an exit mark (killed, e.g. SIGKILL or out of memory): " + kLast);
  end.how = ChainEnd::How::kNotRunning;
  end.why.process_state = 'T';
  EXPECT_EQ(chainEndHeadline(v, end, ""),
            "rank 1 stopped running (its process is stopped (SIGSTOP, a debugger or a job-control "
            "stop)): " +
                kLast);
}

}  // namespace
}  // namespace ncclrec::analyzer
