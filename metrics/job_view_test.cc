#include "metrics/job_view.h"

#include <gtest/gtest.h>

#include "live/analysis.h"
#include "live/rank_convert.h"
#include "live/testing/fixtures.h"

namespace ncclrec::metrics {
namespace {

using live::testing::kCommWorld;
using live::testing::kT0;
constexpr int64_t kSecond = 1'000'000'000;

live::DetectorParams params() { return live::DetectorParams{}; }

TEST(JobViewTest, AHungJobIsAHangWithEachRankInItsState) {
  const live::Snapshot s = live::testing::hangSnapshot();
  const JobView v = viewJob(s, params(), std::nullopt);
  EXPECT_EQ(v.job_id, "fixture");
  EXPECT_EQ(v.hang, HangState::kHang);
  EXPECT_EQ(v.assessment.kind, live::StallKind::kCertain);
  EXPECT_DOUBLE_EQ(v.stall_s, 80);
  ASSERT_EQ(v.ranks.size(), 6u);
  EXPECT_EQ(v.ranks[0].state, RankState::kBlocked);
  EXPECT_EQ(v.ranks[2].state, RankState::kBlocked);
  EXPECT_EQ(v.ranks[3].state, RankState::kInHost);  // stopped after #12, alive
  EXPECT_EQ(v.ranks[4].state, RankState::kExited);
  EXPECT_EQ(v.ranks[5].state, RankState::kCrashed);
  EXPECT_DOUBLE_EQ(v.ranks[0].oldest_pending_s, 80);
  EXPECT_DOUBLE_EQ(v.ranks[3].oldest_pending_s, 0);
  // The detector's awaited ranks: the one in host code and the one that exited.
  EXPECT_TRUE(v.ranks[3].awaited);
  EXPECT_TRUE(v.ranks[4].awaited);
  EXPECT_FALSE(v.ranks[0].awaited);
  EXPECT_FALSE(v.ranks[3].culprit);  // no report yet
}

TEST(JobViewTest, AHealthyJobRuns) {
  const live::Snapshot s = live::testing::healthySnapshot();
  const JobView v = viewJob(s, params(), std::nullopt);
  EXPECT_EQ(v.hang, HangState::kNone);
  EXPECT_DOUBLE_EQ(v.stall_s, 0);
  for (const RankFacts& f : v.ranks) EXPECT_EQ(f.state, RankState::kRunning);
}

TEST(JobViewTest, AShortStallIsStalledNotAHangAndItsRanksAreBlockedOrInHost) {
  // Rank 0 has waited in #31 for 2 s; rank 1 is in host code since #30. The detector gives a
  // rank in host code far more time than that.
  live::Snapshot s = live::testing::healthySnapshot();
  s.now_ns = kT0 + 33 * kSecond;
  format::RankData d = live::testing::makeRank(0, 2, "node0", kCommWorld, 30, 1);
  d.events.back().setEnqueueNs(kT0 + 31 * kSecond);
  d.heartbeat_ns = s.now_ns;
  s.ranks[0] = live::entryFromRankData(d);
  live::analyze(&s);
  const JobView v = viewJob(s, params(), std::nullopt);
  EXPECT_EQ(v.hang, HangState::kStalled) << v.assessment.why;
  EXPECT_NEAR(v.stall_s, 2, 1e-9);
  EXPECT_GT(v.hang_after_s, v.stall_s);
  EXPECT_EQ(v.ranks[0].state, RankState::kBlocked);
  EXPECT_EQ(v.ranks[1].state, RankState::kInHost);
}

TEST(JobViewTest, AReportOfThisRunMakesItAHangAndNamesItsCulprits) {
  const live::Snapshot s = live::testing::healthySnapshot();
  Report r;
  r.run_id = "fixture";
  r.reason = "hang";
  r.verdict_class = "rank_gated_collective";
  r.culprits = {1};
  r.mtime_ns = s.now_ns;
  const JobView v = viewJob(s, params(), r);
  ASSERT_TRUE(v.report.has_value());
  EXPECT_EQ(v.hang, HangState::kHang);
  EXPECT_FALSE(v.ranks[0].culprit);
  EXPECT_TRUE(v.ranks[1].culprit);
  // Not a hang report (a Ctrl-C's): the verdict is kept, the state is the live one.
  r.reason = "interrupt";
  EXPECT_EQ(viewJob(s, params(), r).hang, HangState::kNone);
}

TEST(JobViewTest, AReportOfAnotherRunOrOlderThanTheRanksIsIgnored) {
  const live::Snapshot s = live::testing::healthySnapshot();
  Report r;
  r.run_id = "another";
  r.reason = "hang";
  r.mtime_ns = s.now_ns;
  EXPECT_FALSE(viewJob(s, params(), r).report.has_value());
  r.run_id = "fixture";
  r.mtime_ns = kT0 - kSecond;  // before the ranks started: a previous attempt's
  EXPECT_FALSE(viewJob(s, params(), r).report.has_value());
}

TEST(JobViewTest, ARankWhoseHeartbeatStoppedIsUnresponsive) {
  live::Snapshot s = live::testing::healthySnapshot();
  s.ranks[1].heartbeat_ns = s.now_ns - static_cast<int64_t>((kUnresponsiveAfterS + 1) * 1e9);
  const JobView v = viewJob(s, params(), std::nullopt);
  EXPECT_EQ(v.ranks[0].state, RankState::kRunning);
  EXPECT_EQ(v.ranks[1].state, RankState::kUnresponsive);
}

// Four ranks on one communicator, `steps` all-reduces 100 ms apart; rank `late` enters each
// `late_ms` after the others.
live::Snapshot stepsSnapshot(int steps, int late, int late_ms) {
  live::Snapshot s;
  s.now_ns = kT0 + 100 * kSecond;
  for (int r = 0; r < 4; ++r) {
    format::RankData d = live::testing::makeRank(r, 4, "node0", kCommWorld, steps, 0);
    for (size_t i = 0; i < d.events.size(); ++i) {
      const int64_t t = kT0 + static_cast<int64_t>(i) * kSecond / 10 + r * 1000 +
                        (r == late ? late_ms * 1'000'000ll : 0);
      d.events[i].setEnqueueNs(t);
      d.events[i].setStartNs(t);
      d.events[i].setEndNs(t + 1000);
    }
    d.heartbeat_ns = s.now_ns;
    live::RankEntry e = live::entryFromRankData(d);
    e.source = "/d/" + std::to_string(r);
    s.ranks.push_back(e);
  }
  live::analyze(&s);
  return s;
}

TEST(JobViewTest, ARankTheOthersWaitForHasAHighSlowScore) {
  const live::Snapshot s = stepsSnapshot(20, 2, 40);
  const std::vector<double> score = slowScores(s);
  ASSERT_EQ(score.size(), 4u);
  EXPECT_DOUBLE_EQ(score[2], 1.0);
  EXPECT_DOUBLE_EQ(score[0], 0.0);
  EXPECT_DOUBLE_EQ(viewJob(s, params(), std::nullopt).slow_score, 1.0);
}

TEST(JobViewTest, MicrosecondsLateIsNoStraggler) {
  // Rank 3 enters 3 us after rank 0 every time (the fixture's skew): last always, but the others'
  // waiting for it is far less than 5 % of the time the steps take.
  const std::vector<double> score = slowScores(stepsSnapshot(20, -1, 0));
  for (double v : score) EXPECT_DOUBLE_EQ(v, 0.0);
}

TEST(JobViewTest, BeingLastNoMoreOftenThanChanceIsNoStraggler) {
  // Each rank in turn enters 40 ms late: every one is last a quarter of the time.
  live::Snapshot s = stepsSnapshot(20, -1, 0);
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    auto h = std::make_shared<live::RankHistory>(*s.ranks[r].history);
    for (size_t i = 0; i < h->ops.size(); ++i) {
      if (i % 4 == r) h->ops[i].enqueue_ns += 40'000'000;
    }
    s.ranks[r].history = h;
  }
  live::analyze(&s);
  for (double v : slowScores(s)) EXPECT_DOUBLE_EQ(v, 0.0);
}

TEST(JobViewTest, TooFewCollectivesGiveNoScore) {
  const std::vector<double> score = slowScores(stepsSnapshot(5, 2, 40));
  for (double v : score) EXPECT_DOUBLE_EQ(v, 0.0);
}

TEST(JobViewTest, NewestJobKeepsTheNewestRunAndTheNewestProcessOfEachRank) {
  auto s = std::make_shared<live::Snapshot>(live::testing::healthySnapshot());
  live::RankEntry old = s->ranks[0];
  old.run_id = "older";
  old.start_ns -= kSecond;
  live::RankEntry restarted = s->ranks[1];
  restarted.start_ns -= kSecond;  // rank 1 of this run, started before the one that replaced it
  restarted.pid = 77;
  s->ranks.push_back(old);
  s->ranks.push_back(restarted);
  live::analyze(s.get());
  const auto job = newestJob(s);
  ASSERT_EQ(job->ranks.size(), 2u);
  EXPECT_EQ(job->ranks[0].run_id, "fixture");
  EXPECT_EQ(job->ranks[1].pid, 1001);
  EXPECT_EQ(job->status.size(), 2u);
  // One job already: the same snapshot, not a copy.
  const auto one = std::make_shared<const live::Snapshot>(live::testing::healthySnapshot());
  EXPECT_EQ(newestJob(one), one);
}

}  // namespace
}  // namespace ncclrec::metrics
