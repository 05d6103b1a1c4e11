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
    // Rank 3's record is of another op (a later launch): unknown, no finding.
    Job job = allInside();
    for (int r = 0; r < 3; ++r) kernel(job, r, 1, 1, 0);
    kernel(job, 3, 1, 0, 0);
    job.rank(3).links.back().op_index = 99;
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

}  // namespace
}  // namespace ncclrec::analyzer
