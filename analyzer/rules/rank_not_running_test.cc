// A rank that stopped running while its peers wait for it (rules/rank_not_running.h): inside the
// collective every rank entered, and between two ops (truncation.cc, StopKind::kNotRunning).
#include "analyzer/rules/rank_not_running.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analyzer/testing/job_builder.h"

namespace ncclrec::analyzer {
namespace {

using namespace testing;  // Job, Op, the call sites (analyzer/testing/job_builder.h)

// Every rank entered its 3rd all-reduce from trainStep() and waits there.
Job allInside(int world = 4) {
  Job job(world);
  for (int r = 0; r < world; ++r) job.ops(r, repeat({kTrain}, 3), true);
  return job;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

const RankStatus* statusOf(const Verdict& v, int rank) {
  for (const RankStatus& s : v.status)
    if (s.rank == rank) return &s;
  return nullptr;
}

TEST(RankNotRunningTest, TheLauncherSawItStoppedInsideTheCollective) {
  Job job = allInside();
  EXPECT_EQ(job.diagnose().cls, VerdictClass::kUndecided);  // nothing of the program differs
  job.rank(2).process_state = 'T';
  job.rank(2).process_wchan = "do_signal_stop";
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankNotRunning) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{2});
  EXPECT_EQ(v.waiting, (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(v.seq, 3u);
  EXPECT_EQ(v.comm_id, kComm);
  EXPECT_TRUE(has(v.headline,
                  "rank 2 stopped running inside ncclAllReduce #3 on comm c0ffee00 "
                  "from trainStep() train.cc:27"))
      << v.headline;
  EXPECT_TRUE(has(v.headline, "its process is stopped (SIGSTOP")) << v.headline;
  EXPECT_TRUE(has(v.headline, "; ranks 0-1,3 wait for it in #3")) << v.headline;
  const RankStatus* s = statusOf(v, 2);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->state, RankState::kNotRunning);
  EXPECT_TRUE(has(s->detail, "inside ncclAllReduce #3")) << s->detail;
  EXPECT_EQ(statusOf(v, 0)->state, RankState::kWaiting);
}

TEST(RankNotRunningTest, UninterruptibleSleepNamesItsWaitChannel) {
  Job job = allInside();
  job.rank(1).process_state = 'D';
  job.rank(1).process_wchan = "io_schedule";
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankNotRunning) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{1});
  EXPECT_TRUE(has(v.headline, "uninterruptible sleep in io_schedule")) << v.headline;
}

TEST(RankNotRunningTest, WithoutTheLauncherASilentBlackBoxAmongFreshDumps) {
  // Ranks 0, 1 and 3 dumped at the newest time; rank 2 left only its black box, whose watchdog
  // stopped beating 5 s before.
  Job job = allInside();
  for (int r : {0, 1, 3}) {
    job.rank(r).source = format::SourceKind::kDump;
    job.rank(r).dump_ns = kT0 + 100 * kSec;
  }
  job.rank(2).heartbeat_ns = kT0 + 95 * kSec;
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankNotRunning) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{2});
  EXPECT_TRUE(has(v.headline, "no heartbeat for 5.0s and no dump (frozen or killed")) << v.headline;
}

TEST(RankNotRunningTest, NoCulpritWhenTheLauncherSawItRunOrEveryRankStopped) {
  // A stale heartbeat, but the launcher saw the process sleeping in the collective: it runs.
  Job seen = allInside();
  for (int r : {0, 1, 3}) {
    seen.rank(r).source = format::SourceKind::kDump;
    seen.rank(r).dump_ns = kT0 + 100 * kSec;
  }
  seen.rank(2).heartbeat_ns = kT0 + 95 * kSec;
  seen.rank(2).process_state = 'S';
  const Verdict v = seen.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kUndecided) << v.headline;
  // Every rank stopped (the whole job frozen at once): no culprit either.
  Job frozen = allInside(2);
  frozen.rank(0).process_state = frozen.rank(1).process_state = 'T';
  EXPECT_EQ(frozen.diagnose().cls, VerdictClass::kUndecided);
}

TEST(RankNotRunningTest, BetweenOpsItIsNotHostCode) {
  // Ranks 0-2 wait in their 3rd all-reduce; rank 3 completed 2 and issued nothing since.
  Job job(4);
  for (int r = 0; r < 3; ++r) job.ops(r, repeat({kTrain}, 3), true);
  job.ops(3, repeat({kTrain}, 2));
  EXPECT_EQ(job.diagnose().cls, VerdictClass::kRankStuckInHost);
  job.rank(3).process_state = 'T';
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankNotRunning) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{3});
  EXPECT_TRUE(has(v.headline,
                  "rank 3 stopped running between ops, after 2 all-reduces from "
                  "trainStep(): its process is stopped"))
      << v.headline;
  EXPECT_TRUE(has(v.headline, "ranks 0-2 are in their 3rd")) << v.headline;
  EXPECT_EQ(statusOf(v, 3)->state, RankState::kNotRunning);
  // Its black box stopped beating long ago: still not running (not dead), the launcher saw it.
  job.rank(3).heartbeat_ns = kT0 + 80 * kSec;
  EXPECT_EQ(job.diagnose().cls, VerdictClass::kRankNotRunning);
}

TEST(RankNotRunningTest, WithoutTheLauncherItsOwnDumpSawItsNcclThreadInUninterruptibleSleep) {
  // Rank 3 dumped (its watchdog runs) while the thread that calls NCCL sleeps in the kernel.
  Job job(4);
  for (int r = 0; r < 3; ++r) job.ops(r, repeat({kTrain}, 3), true);
  job.ops(3, repeat({kTrain}, 2));
  RankData& r3 = job.rank(3);
  r3.source = format::SourceKind::kDump;
  r3.dump_ns = r3.threads_ns = kT0 + 100 * kSec;
  format::ThreadState main_thread;
  main_thread.tid = 103;  // the process's main thread: no event says which thread called NCCL
  main_thread.kernel_state = 'S';
  r3.threads = {main_thread};
  EXPECT_EQ(job.diagnose().cls, VerdictClass::kRankStuckInHost);
  r3.threads[0].kernel_state = 'D';
  r3.threads[0].wchan = "kernel_clone";
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankNotRunning) << v.headline;
  EXPECT_TRUE(has(v.headline,
                  "its thread that calls NCCL (103) was in uninterruptible sleep in "
                  "kernel_clone when it dumped"))
      << v.headline;
  // A snapshot of an older dump says nothing of now.
  r3.threads_ns = kT0 + 10 * kSec;
  EXPECT_EQ(job.diagnose().cls, VerdictClass::kRankStuckInHost);
}

TEST(RankNotRunningTest, ADivergenceOfTheStoppedRankStillComesFirst) {
  // Rank 3 passed another count to the collective it stopped in: the mismatch is the cause.
  Job job(4);
  for (int r = 0; r < 3; ++r) job.ops(r, repeat({kTrain}, 3), true);
  Op half{kTrain, 2048};
  job.ops(3, concat(repeat({kTrain}, 2), {half}), true);
  job.rank(3).process_state = 'T';
  EXPECT_EQ(job.diagnose().cls, VerdictClass::kSizeMismatch);
}

}  // namespace
}  // namespace ncclrec::analyzer
