// A rank's GPU that holds back the collective every rank entered (rules/device_stalled.h), from
// the ranks' kernel records (format/bbox_layout.h kKernelPeer).
#include "analyzer/rules/device_stalled.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analyzer/testing/job_builder.h"

namespace ncclrec::analyzer {
namespace {

using namespace testing;  // Job, Op, the call sites (analyzer/testing/job_builder.h)

// The rank's kernel record: its newest op launched at `launched_ns` with `channels` channels, of
// which `started` started (the last at kT0 + 50.2 s) and `stopped` stopped; 40 earlier channels.
void kernel(Job& job, int rank, uint32_t channels, uint32_t started, uint32_t stopped,
            int64_t launched_ns = kT0 + 50 * kSec) {
  format::RankData& r = job.rank(rank);
  format::Link l;
  l.comm_id = kComm;
  l.comm_index = 0;
  l.peer = format::kKernelPeer;
  l.op_index = r.events.back().index;
  l.op_steps = channels;
  l.op_base = 40;
  l.planned = 40 + channels;
  l.posted = 40 + started;
  l.done = 40 + stopped;
  l.op_start_ns = launched_ns;
  l.posted_ns = kT0 + 50 * kSec + kSec / 5;
  l.done_ns = kT0 + 49 * kSec;
  r.links.push_back(l);
}

// A ring connection r -> r + 1 whose sender sent `sent` steps and receiver got `received`.
void connection(Job& job, int from, int to, uint64_t sent, uint64_t received) {
  for (const bool send : {true, false}) {
    format::RankData& r = job.rank(send ? from : to);
    format::Link l;
    l.comm_id = kComm;
    l.peer = send ? to : from;
    l.is_send = send;
    l.op_index = r.events.back().index;
    l.moved = send ? sent : received;
    l.moved_ns = kT0 + 50 * kSec;
    l.op_start_ns = kT0 + 50 * kSec;
    r.links.push_back(l);
  }
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

Job allInside(int world = 4) {
  Job job(world);
  for (int r = 0; r < world; ++r) job.ops(r, repeat({kTrain}, 3), true);
  return job;
}

TEST(DeviceStalledTest, AKernelThatNeverStartedOnOneGpuWhileItRunsOnTheOthers) {
  Job job = allInside();
  for (int r = 0; r < 3; ++r) kernel(job, r, 2, 2, 0);
  kernel(job, 3, 2, 0, 0);
  job.rank(3).host = "nodeb";
  format::Comm comm;
  comm.comm_id = kComm;
  comm.bus_id = "0000:3b:00.0";
  job.rank(3).comms.push_back(comm);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kDeviceStalled) << v.headline;
  EXPECT_EQ(v.ranks, (std::vector<int>{3}));
  EXPECT_EQ(v.waiting, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(v.seq, 3u);
  EXPECT_EQ(v.headline,
            "the GPU of rank 3 (host nodeb, bus 0000:3b:00.0) never started the kernel of "
            "ncclAllReduce #3 on comm c0ffee00 from trainStep() train.cc:27, launched 50.0s ago, "
            "while the GPUs of ranks 0-2 run theirs; ranks 0-2 wait for it in #3; suspect that "
            "GPU or its stream: a kernel queued before it that does not end, or a GPU that "
            "stopped (Xid errors in the kernel log)");
  ASSERT_FALSE(v.tables.empty());
  const EvidenceTable& t = v.tables.back();
  EXPECT_TRUE(has(t.title, "kernel channels on comm c0ffee00 around ncclAllReduce #3"));
  EXPECT_EQ(t.marked, (std::vector<bool>{false, false, false, true}));
}

TEST(DeviceStalledTest, WithoutBusIdOrHostTheRankAloneIsNamed) {
  Job job = allInside();
  for (int r = 1; r < 4; ++r) kernel(job, r, 1, 1, 0);
  kernel(job, 0, 1, 0, 0);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kDeviceStalled) << v.headline;
  EXPECT_TRUE(has(v.headline, "the GPU of rank 0 (its bus id is not recorded) never started"))
      << v.headline;
}

TEST(DeviceStalledTest, NoFindingBeforeASecondNorWhenNoGpuStartedNorWithoutRecords) {
  {
    // Launched a tenth of a second before the newest recording: not yet.
    Job job = allInside();
    for (int r = 0; r < 3; ++r) kernel(job, r, 1, 1, 0);
    kernel(job, 3, 1, 0, 0, kT0 + 100 * kSec - kSec / 10);
    EXPECT_NE(job.diagnose().cls, VerdictClass::kDeviceStalled);
  }
  {
    // No GPU started it: nobody runs the op, no rank stands out.
    Job job = allInside();
    for (int r = 0; r < 4; ++r) kernel(job, r, 1, 0, 0);
    EXPECT_NE(job.diagnose().cls, VerdictClass::kDeviceStalled);
  }
  {
    // Every kernel started: the ranks wait for data, the transport's question.
    Job job = allInside();
    for (int r = 0; r < 4; ++r) kernel(job, r, 1, 1, 0);
    EXPECT_EQ(job.diagnose().cls, VerdictClass::kUndecided);
  }
}

// Ranks 1-3 finished #3 and wait in #4; rank 0's kernel of #3 started and never stopped though
// every step sent to it arrived: its GPU.
Job rankZeroNeverFinished() {
  Job job(4);
  for (int r = 0; r < 4; ++r) job.ops(r, repeat({kTrain}, r == 0 ? 3 : 4), true);
  kernel(job, 0, 1, 1, 0);
  for (int r = 1; r < 4; ++r) kernel(job, r, 1, 1, 0);
  for (int r = 0; r < 4; ++r) connection(job, r, (r + 1) % 4, 12, 12);
  return job;
}

TEST(DeviceStalledTest, AKernelThatNeverFinishedWhileItsDataArrivedAndThePeersFinished) {
  const Verdict v = rankZeroNeverFinished().diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kDeviceStalled) << v.headline;
  EXPECT_EQ(v.ranks, (std::vector<int>{0}));
  EXPECT_EQ(v.waiting, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(v.seq, 3u);
  EXPECT_TRUE(has(v.headline,
                  "the GPU of rank 0 (its bus id is not recorded) started the kernel of "
                  "ncclAllReduce #3 on comm c0ffee00 from trainStep() train.cc:27 at "
                  "22:14:10.200 UTC and it never finished, though every step sent to it "
                  "arrived, while ranks 1-3 finished theirs and wait in the next one"))
      << v.headline;
}

TEST(DeviceStalledTest, AKernelWaitingForDataThatNeverCameIsTheTransports) {
  Job job = rankZeroNeverFinished();
  // 3 -> 0 delivered 10 of 12: the data is what is missing.
  job.rank(0).links.erase(std::remove_if(job.rank(0).links.begin(), job.rank(0).links.end(),
                                         [](const format::Link& l) {
                                           return !l.isKernel() && !l.is_send && l.peer == 3;
                                         }),
                          job.rank(0).links.end());
  connection(job, 3, 0, 12, 10);
  job.rank(3).links.pop_back();  // keep rank 3's first send record only
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kTransportStalled) << v.headline;
  // Without counters for what arrived, no finding either.
  Job bare = rankZeroNeverFinished();
  for (int r = 0; r < 4; ++r)
    std::erase_if(bare.rank(r).links, [](const format::Link& l) { return !l.isKernel(); });
  EXPECT_NE(bare.diagnose().cls, VerdictClass::kDeviceStalled);
}

// Asynchronous launches (a training loop that does not wait for its GPU): every rank issued
// all-reduces #3-#5, none completed; each kernel record holds #5, launched behind the op the GPUs
// are at. Ranks 0-2's GPUs run #3's two channels (they wait for rank 3's data); rank 3's runs
// nothing, its six launched channels never started.
Job launchedBehind(int64_t last_launch_ns = kT0 + 4 * kSec) {
  Job job(4);
  for (int r = 0; r < 4; ++r) {
    job.ops(r, repeat({kTrain}, 2));
    for (int i = 0; i < 3; ++i) job.ops(r, repeat({kTrain}, 1), true);
    kernel(job, r, 2, 0, 0, last_launch_ns);
    format::Link& l = job.rank(r).links.back();
    l.op_base = 44;  // #5 is the newest: #3 and #4 launched before it
    l.planned = 46;  // #3-#5, two channels each, after 40 earlier ones
    l.posted = r == 3 ? 40 : 42;
    l.done = 40;
    l.posted_ns = kT0 + 2 * kSec + kSec / 5;
    l.done_ns = kT0 + 2 * kSec;
  }
  return job;
}

TEST(DeviceStalledTest, OpsLaunchedBehindTheStuckOneStillNameTheGpuByItsTotals) {
  const Verdict v = launchedBehind().diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kDeviceStalled) << v.headline;
  EXPECT_EQ(v.ranks, (std::vector<int>{3}));
  EXPECT_EQ(v.waiting, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(v.seq, 3u);  // the op its GPU is at, not the newest launched
  EXPECT_EQ(v.headline,
            "the GPU of rank 3 (its bus id is not recorded) never started the kernel of "
            "ncclAllReduce #3 on comm c0ffee00 from trainStep() train.cc:27, issued 98.0s ago: "
            "it runs no kernel channel of the communicator while 6 launched channels wait (ops "
            "launched behind it), and the GPUs of ranks 0-2 run theirs; ranks 0-2 wait for it; "
            "suspect that GPU or its stream: a kernel queued before it that does not end, or a "
            "GPU that stopped (Xid errors in the kernel log)");
  ASSERT_FALSE(v.tables.empty());
  const EvidenceTable& t = v.tables.back();
  EXPECT_TRUE(has(t.title, "kernel channels on comm c0ffee00, every launched op, per rank"));
  EXPECT_EQ(t.marked, (std::vector<bool>{false, false, false, true}));
}

TEST(DeviceStalledTest, TotalsNameNoGpuWhileLaunchesAreRecentOrEveryGpuIsIdle) {
  // The last launch a tenth of a second before the newest recording: the GPU may start it yet.
  EXPECT_NE(launchedBehind(kT0 + 100 * kSec - kSec / 10).diagnose().cls,
            VerdictClass::kDeviceStalled);
  // No GPU runs anything: no rank stands out.
  Job idle = launchedBehind();
  for (int r = 0; r < 3; ++r) idle.rank(r).links.back().posted = 40;
  EXPECT_NE(idle.diagnose().cls, VerdictClass::kDeviceStalled);
  // A rank without a kernel record: unknown, no finding.
  Job bare = launchedBehind();
  bare.rank(1).links.clear();
  EXPECT_NE(bare.diagnose().cls, VerdictClass::kDeviceStalled);
}

}  // namespace
}  // namespace ncclrec::analyzer
