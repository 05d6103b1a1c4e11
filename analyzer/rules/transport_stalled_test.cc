// A connection that stopped moving data inside the collective every rank entered
// (rules/transport_stalled.h), from the ranks' transport counters (format/model.h Link).
#include "analyzer/rules/transport_stalled.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analyzer/testing/job_builder.h"

namespace ncclrec::analyzer {
namespace {

using namespace testing;  // Job, Op, the call sites (analyzer/testing/job_builder.h)

constexpr uint32_t kSteps = 6;

// Every rank entered its 3rd all-reduce from trainStep() and waits there; each still beats.
Job allInside(int world = 4) {
  Job job(world);
  for (int r = 0; r < world; ++r) job.ops(r, repeat({kTrain}, 3), true);
  return job;
}

// One side of a ring connection: earlier ops moved 60 steps over it; of the pending op's kSteps,
// `moved` were sent (or received), the last at `moved_ns`; its side of the op began at kT0 + 50 s.
void link(Job& job, int rank, int peer, bool is_send, uint32_t moved, int64_t moved_ns,
          uint64_t op_index = UINT64_MAX) {
  format::RankData& r = job.rank(rank);
  format::Link l;
  l.comm_id = kComm;
  l.comm_index = 0;
  l.peer = peer;
  l.is_send = is_send;
  l.op_index = op_index == UINT64_MAX ? r.events.back().index : op_index;
  l.op_steps = kSteps;
  l.op_base = 60;
  l.planned = 60 + kSteps;
  l.posted = 60 + kSteps;
  l.moved = 60 + moved;
  l.done = 60 + moved;
  l.op_start_ns = kT0 + 50 * kSec;
  l.moved_ns = moved > 0 ? moved_ns : kT0 + 40 * kSec;
  l.posted_ns = l.op_start_ns;
  l.done_ns = l.moved_ns;
  r.links.push_back(l);
}

// A ring 0 -> 1 -> 2 -> 3 -> 0 where every connection moved `moved[r]` steps from r to r + 1,
// sender and receiver agreeing, except where `received` says what the receiver got.
void ring(Job& job, const std::vector<uint32_t>& sent, const std::vector<uint32_t>& received,
          int64_t when = kT0 + 90 * kSec) {
  const int n = static_cast<int>(sent.size());
  for (int r = 0; r < n; ++r) {
    const int next = (r + 1) % n;
    link(job, r, next, true, sent[r], when);
    link(job, next, r, false, received[r], when);
  }
}

// Rank `rank` sent all kSteps steps of the op its ring links were made for, then began the next
// op (its newest proxy op, after those steps) and sent `steps` of it.
void sentInTheNextOp(Job& job, int rank, uint32_t steps) {
  for (format::Link& l : job.rank(rank).links) {
    if (!l.is_send) continue;
    l.op_base = 60 + kSteps;
    l.planned = l.posted = l.op_base + kSteps;
    l.moved = l.done = l.op_base + steps;
  }
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(TransportStalledTest, TheSenderSentWhatItsReceiverNeverGot) {
  Job job = allInside();
  ring(job, {2, 3, 4, 1}, {2, 3, 0, 1});
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kTransportStalled) << v.headline;
  EXPECT_EQ(v.ranks, (std::vector<int>{2, 3}));
  EXPECT_EQ(v.waiting, (std::vector<int>{0, 1}));
  EXPECT_EQ(v.seq, 3u);
  EXPECT_EQ(v.comm_id, kComm);
  EXPECT_TRUE(has(v.headline,
                  "data stopped moving between rank 2 and rank 3 inside ncclAllReduce #3 on comm "
                  "c0ffee00 from trainStep() train.cc:27, which every rank issued with the same "
                  "arguments: rank 2 sent 4 steps on channel 0 that rank 3 never received (its "
                  "last send at 22:14:50.000 UTC)"))
      << v.headline;
  // Rank 3's side began at kT0 + 50 s; the newest recording is at kT0 + 100 s.
  EXPECT_TRUE(has(v.headline,
                  "; rank 3 has 0 of the 6 steps of #3 and received nothing for "
                  "50.0s; ranks 0-1 wait behind it"))
      << v.headline;
  ASSERT_EQ(v.tables.size(), 1u);
  const EvidenceTable& t = v.tables.front();
  EXPECT_EQ(t.columns.front(), "from");
  ASSERT_EQ(t.rows.size(), 4u);
  EXPECT_EQ(t.marked, (std::vector<bool>{false, false, true, false}));
  EXPECT_EQ(t.rows[2][0], TableCell::of(2));
  EXPECT_EQ(t.rows[2][3], TableCell::of(64));  // sent since the communicator began
  EXPECT_EQ(t.rows[2][4], TableCell::of(60));  // received
  EXPECT_EQ(t.rows[2][5], TableCell::of(4));   // behind
}

TEST(TransportStalledTest, HostsNameTheNetworkPath) {
  Job job = allInside();
  for (int r = 0; r < 4; ++r) job.rank(r).host = r < 3 ? "node-a" : "node-b";
  ring(job, {2, 3, 4, 1}, {2, 3, 1, 1});
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kTransportStalled) << v.headline;
  EXPECT_TRUE(has(v.headline, "between rank 2 (host node-a) and rank 3 (host node-b)"))
      << v.headline;
  EXPECT_TRUE(has(v.headline, "rank 2 sent 3 steps on channel 0 that rank 3 never received"))
      << v.headline;
  EXPECT_TRUE(has(v.headline, "; rank 3 has 1 of the 6 steps of #3 and received nothing for 10.0s"))
      << v.headline;
  EXPECT_TRUE(has(v.headline, "; suspect the network path node-a -> node-b")) << v.headline;
}

TEST(TransportStalledTest, BothDirectionsBetweenTwoHostsNameTheNetworkBetweenThem) {
  // A cut between the hosts: rank 1 -> 2 and rank 3 -> 0 both lost what was sent.
  Job job = allInside();
  for (int r = 0; r < 4; ++r) job.rank(r).host = r < 2 ? "node-a" : "node-b";
  ring(job, {2, 3, 3, 4}, {2, 2, 3, 1});
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kTransportStalled) << v.headline;
  EXPECT_EQ(v.ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_TRUE(v.waiting.empty());
  EXPECT_TRUE(has(v.headline, "between rank 1 (host node-a) and rank 2 (host node-b)"))
      << v.headline;
  EXPECT_TRUE(has(v.headline,
                  "; 1 more connection stalled so; suspect the network between node-a "
                  "and node-b (both directions stalled)"))
      << v.headline;
}

TEST(TransportStalledTest, OneHostNamesThePathBetweenItsProcesses) {
  Job job = allInside();
  for (int r = 0; r < 4; ++r) job.rank(r).host = "vm";
  ring(job, {2, 3, 4, 1}, {2, 3, 0, 1});
  const Verdict v = job.diagnose();
  EXPECT_TRUE(has(v.headline, "; suspect the path between the two processes on host vm"))
      << v.headline;
}

TEST(TransportStalledTest, WithoutTransportCountersNothingIsDecided) {
  // NCCL's profiler plugin not in use: no links.
  EXPECT_EQ(allInside().diagnose().cls, VerdictClass::kUndecided);
}

TEST(TransportStalledTest, ConnectionsThatWaitForTheirSenderAreNoStall) {
  // Every receiver got all its sender sent: they wait for data not yet produced (a slow GPU), and
  // no connection lost anything.
  Job job = allInside();
  ring(job, {2, 3, 4, 1}, {2, 3, 4, 1});
  EXPECT_EQ(job.diagnose().cls, VerdictClass::kUndecided);
}

TEST(TransportStalledTest, AStepInFlightForUnderASecondIsTraffic) {
  Job job = allInside();
  // Rank 3 received its last step 0.5 s before the newest recording.
  ring(job, {2, 3, 4, 1}, {2, 3, 3, 1}, kT0 + 100 * kSec - kSec / 2);
  EXPECT_EQ(job.diagnose().cls, VerdictClass::kUndecided);
}

TEST(TransportStalledTest, RanksStraddlingTwoOpsOfTheRingAreNoStop) {
  // A cut while #3's last steps travel: ranks 2 and 3 got all their data of #3, finished it and
  // wait in #4; rank 3's last 2 steps to rank 0 were lost, so ranks 0 and 1 still wait in #3.
  Job job(4);
  for (int r = 0; r < 4; ++r) job.ops(r, repeat({kTrain}, r < 2 ? 3 : 4), true);
  ring(job, {2, 3, 4, 6}, {2, 3, 4, 4});
  // Of #4, rank 3 sent rank 0 one step, which rank 0, still in #3, has not asked for.
  sentInTheNextOp(job, 3, 1);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kTransportStalled) << v.headline;
  EXPECT_EQ(v.ranks, (std::vector<int>{0, 3}));
  EXPECT_EQ(v.seq, 3u);  // what the receiver waits in
  EXPECT_TRUE(has(v.headline,
                  "between rank 3 and rank 0 inside ncclAllReduce #3 on comm c0ffee00 "
                  "from trainStep() train.cc:27 (the ranks that got all their data are "
                  "in the next one): rank 3 sent 2 steps on channel 0 that rank 0 never "
                  "received"))
      << v.headline;
}

// What ranks that went on to #4 sent there to a rank still in #3 is not lost: that rank has not
// asked for it. Every step of #3 arrived; nothing is stalled.
TEST(TransportStalledTest, WhatRanksAheadSentInTheNextOpIsNotLost) {
  Job job(4);
  for (int r = 0; r < 4; ++r) job.ops(r, repeat({kTrain}, r < 2 ? 3 : 4), true);
  ring(job, {2, 3, 4, 6}, {2, 3, 4, 6});
  sentInTheNextOp(job, 3, 2);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kUndecided) << v.headline;
}

// A gather's root waits for one sender whose data stopped coming, while every sender, its data
// handed to the network, finished the gather and went on to the next all-reduce (a different
// call): the connection into the root is named, not the senders that merely went on.
TEST(TransportStalledTest, AGatherRootWaitingForOneSenderWhileTheOthersWentOnNamesThatLink) {
  const Op gather{kLoss, 1, OpType::kGather, kFloat, kSum, 0};
  Job job(4);
  job.ops(0, {Op{kTrain}, Op{kTrain}, gather}, true);
  for (int r = 1; r < 4; ++r) job.ops(r, {Op{kTrain}, Op{kTrain}, gather, Op{kTrain}}, true);
  for (int r = 1; r < 4; ++r) {
    // Each sender's proxy op of the gather was its newest to rank 0: one step, sent.
    link(job, r, 0, true, 1, kT0 + 90 * kSec, job.rank(r).events[2].index);
    link(job, 0, r, false, r == 1 ? 0 : 1, kT0 + 90 * kSec);
  }
  Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kTransportStalled) << v.headline;
  EXPECT_EQ(v.ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(v.waiting, (std::vector<int>{2, 3}));
  EXPECT_EQ(v.seq, 3u);
  EXPECT_TRUE(has(v.headline,
                  "data stopped moving between rank 1 and rank 0 inside ncclGather #3 on comm "
                  "c0ffee00 from logLoss() train.cc:40 (the ranks that got all their data are in "
                  "the next one): rank 1 sent 1 step on channel 0 that rank 0 never received"))
      << v.headline;
  EXPECT_TRUE(has(v.headline, "; ranks 2-3 wait behind it;")) << v.headline;
  // The same, but the senders' gathers differ from the root's: the program's fault, not this.
  Job mismatch(4);
  mismatch.ops(0, {Op{kTrain}, Op{kTrain}, gather}, true);
  Op half = gather;
  half.count = 2;
  for (int r = 1; r < 4; ++r) mismatch.ops(r, {Op{kTrain}, Op{kTrain}, half, Op{kTrain}}, true);
  for (int r = 1; r < 4; ++r) {
    link(mismatch, r, 0, true, 1, kT0 + 90 * kSec, mismatch.rank(r).events[2].index);
    link(mismatch, 0, r, false, r == 1 ? 0 : 1, kT0 + 90 * kSec);
  }
  v = mismatch.diagnose();
  EXPECT_NE(v.cls, VerdictClass::kTransportStalled) << v.headline;
}

// The same straddle without transport counters (no profiler plugin): nobody left the program's
// order and ranks 0-1 are inside #3, not in host code: undecided, saying where each side waits,
// never rank_stuck_in_host.
TEST(TransportStalledTest, WithoutCountersRanksStillInTheOpTheOthersFinishedAreNotInHostCode) {
  Job job(4);
  for (int r = 0; r < 4; ++r) job.ops(r, repeat({kTrain}, r < 2 ? 3 : 4), true);
  Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kUndecided) << v.headline;
  EXPECT_TRUE(v.ranks.empty());
  EXPECT_EQ(v.seq, 3u);
  EXPECT_EQ(v.headline,
            "ranks 0-1 wait in ncclAllReduce #3 on comm c0ffee00 from trainStep() train.cc:27, "
            "which ranks 2-3 got through: they wait in ncclAllReduce #4; the ranks agree on "
            "every op before it");
  ASSERT_EQ(v.missing.size(), 1u);
  EXPECT_TRUE(has(v.missing[0], "ranks 0-1 are inside ncclAllReduce #3, not in host code"))
      << v.missing[0];
  // One rank behind: the same, in the singular.
  Job one(4);
  for (int r = 0; r < 4; ++r) one.ops(r, repeat({kTrain}, r < 3 ? 3 : 4), true);
  v = one.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kUndecided) << v.headline;
  EXPECT_TRUE(has(v.headline, "which rank 3 got through: it waits in ncclAllReduce #4"))
      << v.headline;
  // A rank whose newest op completed and that issued nothing since is in host code, as before.
  Job host(4);
  for (int r = 0; r < 4; ++r) host.ops(r, repeat({kTrain}, r == 0 ? 3 : 4), r != 0);
  EXPECT_EQ(host.diagnose().cls, VerdictClass::kRankStuckInHost);
}

TEST(TransportStalledTest, ArgumentsThatDifferAreTheProgramsFault) {
  // Rank 3 passes half the count: its peers' extra steps are never received, which is the size
  // mismatch, not the network.
  Job job(4);
  for (int r = 0; r < 4; ++r) {
    Op last{kTrain};
    if (r == 3) last.count = 2048;
    job.ops(r, repeat({kTrain}, 2)).ops(r, {last}, true);
  }
  ring(job, {2, 3, 4, 1}, {2, 3, 0, 1});
  EXPECT_EQ(job.diagnose().cls, VerdictClass::kSizeMismatch);
}

TEST(TransportStalledTest, ARankThatStoppedRunningIsTheCauseInstead) {
  // Rank 3 is stopped: its counters are frozen with it, which is no fault of the link.
  Job job = allInside();
  ring(job, {2, 3, 4, 1}, {2, 3, 0, 1});
  job.rank(3).process_state = 'T';
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankNotRunning) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{3});
}

TEST(TransportStalledTest, SeveralStalledConnectionsAreCounted) {
  Job job = allInside();
  ring(job, {2, 3, 4, 5}, {2, 3, 0, 1});
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kTransportStalled) << v.headline;
  EXPECT_EQ(v.ranks, (std::vector<int>{0, 2, 3}));
  EXPECT_TRUE(has(v.headline,
                  "; 1 more connection stalled so; rank 1 waits behind it; suspect the "
                  "path between them (their hosts are not recorded)"))
      << v.headline;
}

}  // namespace
}  // namespace ncclrec::analyzer
