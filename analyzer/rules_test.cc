#include "analyzer/rules.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analyzer/testing/job_builder.h"

namespace ncclrec::analyzer::engine {
namespace {

using namespace analyzer::testing;  // Job, Op, the call sites (analyzer/testing/job_builder.h)

TEST(RulesTest, TheVerdictOrderIsOneList) {
  std::vector<std::string> names;
  for (const NamedRule& r : verdictRules()) names.emplace_back(r.name);
  const std::vector<std::string> expected = {
      "device_collision",    "comm_creation",      "lone_collective",
      "early_comm_end",      "partial_split",      "group_peer_skip",
      "wait_cycle",          "p2p_stop",           "p2p_mismatch",
      "pending_divergence",  "divergence_or_stop", "failed_call",
      "stuck_creating_comm", "slow_rank",          "no_hang",
      "all_wait_in_one_op"};
  EXPECT_EQ(names, expected);
}

TEST(RulesTest, EachRuleDecidesOnlyItsOwnPattern) {
  // Every rank waits in the same all-reduce: only the last rule decides.
  Job job(2);
  job.ops(0, {{kTrain}, {kTrain}}, true).ops(1, {{kTrain}, {kTrain}}, true);
  const format::LoadedSet set = job.set();
  const DiagnoseOptions options;
  const CallSites sites(set.ranks, {});
  Engine en(set, options, sites);
  const auto rules = verdictRules();
  for (size_t i = 0; i + 1 < rules.size(); ++i) {
    EXPECT_FALSE(rules[i].find(en).has_value()) << rules[i].name;
  }
  const std::optional<Verdict> v = rules.back().find(en);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->cls, VerdictClass::kUndecided);
  EXPECT_EQ(v->seq, 2u);
}

TEST(RulesTest, RunRulesAddsEachRanksStatus) {
  Job job(3);
  job.ops(0, {{kTrain}, {kSave}}, true).ops(1, {{kTrain}}).ops(2, {{kTrain}});
  const format::LoadedSet set = job.set();
  const DiagnoseOptions options;
  const CallSites sites(set.ranks, {});
  Engine en(set, options, sites);
  const Verdict v = runRules(en);
  EXPECT_EQ(v.cls, VerdictClass::kRankStuckInHost) << v.headline;
  ASSERT_EQ(v.status.size(), 3u);
  EXPECT_EQ(v.status[0].state, RankState::kWaiting);
  EXPECT_EQ(rankStateName(v.status[0].state), "waiting");
  EXPECT_EQ(rankStateName(v.status[1].state), "in host code");
}

// A black box with neither exit nor crash mark whose heartbeat stopped: the status says whether
// it dumped first (cxxrun stops a hung job's ranks once they dumped) or was killed from outside.
TEST(RulesTest, ARankGoneWithoutAMarkIsStoppedAfterItsDumpOrKilled) {
  Job job(3);
  job.ops(0, {{kTrain}, {kTrain}}, true).ops(1, {{kTrain}}).ops(2, {{kTrain}});
  format::LoadedSet set = job.set();
  for (size_t r : {1, 2}) set.ranks[r].heartbeat_ns -= 60 * kSec;
  set.ranks[2].dump_ns = set.ranks[2].heartbeat_ns - kSec;
  set.ranks[2].dump_reason = format::DumpReason::kTrigger;
  const DiagnoseOptions options;
  const CallSites sites(set.ranks, {});
  Engine en(set, options, sites);
  const Verdict v = runRules(en);
  ASSERT_EQ(v.status.size(), 3u);
  EXPECT_EQ(v.status[1].state, RankState::kDead);
  EXPECT_EQ(v.status[1].detail.rfind("killed from outside (no exit or crash mark, no dump); ", 0),
            0u)
      << v.status[1].detail;
  EXPECT_EQ(v.status[2].state, RankState::kDead);
  EXPECT_EQ(v.status[2].detail.rfind("stopped after its trigger dump (no exit or crash mark); ", 0),
            0u)
      << v.status[2].detail;
}

TEST(RulesTest, RankStateNamesAreTheStatusWords) {
  EXPECT_EQ(rankStateName(RankState::kNoData), "no data");
  EXPECT_EQ(rankStateName(RankState::kExited), "exited");
  EXPECT_EQ(rankStateName(RankState::kCrashed), "crashed");
  EXPECT_EQ(rankStateName(RankState::kDead), "dead");
  EXPECT_EQ(rankStateName(RankState::kWaiting), "waiting");
  EXPECT_EQ(rankStateName(RankState::kInHostCode), "in host code");
}

}  // namespace
}  // namespace ncclrec::analyzer::engine
