#include "analyzer/rules.h"

#include <gtest/gtest.h>

#include <set>
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
      "device_collision",  "comm_creation",       "lone_collective",    "gated_at_the_end",
      "early_comm_end",    "partial_split",       "group_peer_skip",    "wait_cycle",
      "p2p_stop",          "p2p_mismatch",        "device_stalled",     "transport_stalled",
      "node_unreachable",  "pending_divergence",  "divergence_or_stop", "rank_not_running",
      "failed_call",       "stuck_creating_comm", "slow_rank",          "no_hang",
      "all_wait_in_one_op"};
  EXPECT_EQ(names, expected);
}

TEST(RulesTest, CauseStepsAreDeclaredInTheTable) {
  // Each rank 0 sends to rank 1, then ranks 1 and 2 all-reduce on another communicator. Rank 2 is
  // killed; rank 1's all-reduce fails (remote error) and it exits without its 3rd receive; rank 0
  // waits in its 3rd send. The p2p rule finds the unmatched send; the cause steps its row
  // declares replace it with the killed rank, the send kept as evidence.
  testing::Op on_b{kLoss, 4};
  on_b.comm = kOtherComm;
  testing::Op send{kTrain, 256, format::OpType::kSend};
  send.root = 1;
  testing::Op recv{kTrain, 256, format::OpType::kRecv};
  recv.root = 0;
  Job job(3);
  job.ops(0, {send, send, send}, true);
  job.ops(1, {recv, on_b, recv, on_b, on_b});
  format::EventRecord& failed = job.rank(1).events.back();
  failed.state = format::EventState::kFailed;
  failed.result = 6;  // ncclRemoteError
  job.rank(1).exited = true;
  job.ops(2, {on_b, on_b});
  job.rank(2).fatal_signal = 9;
  for (int r = 0; r < 3; ++r) numberLikeNccl(job.rank(r));
  const format::LoadedSet set = job.set();
  const DiagnoseOptions options;
  const CallSites sites(set.ranks, {});
  Engine en(set, options, sites);
  const NamedRule* p2p = nullptr;
  for (const NamedRule& r : verdictRules()) {
    if (r.name == "p2p_mismatch") p2p = &r;
    // Only the rules whose verdicts can be symptoms declare cause steps.
    const bool symptom =
        r.name == "wait_cycle" || r.name == "p2p_mismatch" || r.name == "divergence_or_stop";
    EXPECT_EQ(!r.causes.empty(), symptom) << r.name;
  }
  ASSERT_NE(p2p, nullptr);
  Inferred inferred;
  std::optional<Verdict> v = p2p->find(en, inferred);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->cls, VerdictClass::kP2pMismatch) << v->headline;
  bool explained = false;
  for (const Explainer explain : p2p->causes) {
    if ((explained = explain(en, inferred, *v))) break;
  }
  EXPECT_TRUE(explained);
  EXPECT_EQ(v->cls, VerdictClass::kRankCrashed) << v->headline;
  EXPECT_EQ(v->ranks, std::vector<int>{2});
  ASSERT_FALSE(v->tables.empty());
  EXPECT_EQ(v->tables.back().title, "what followed");
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
  Inferred inferred;
  for (size_t i = 0; i + 1 < rules.size(); ++i) {
    EXPECT_FALSE(rules[i].find(en, inferred).has_value()) << rules[i].name;
  }
  EXPECT_TRUE(inferred.dead.empty());
  const std::optional<Verdict> v = rules.back().find(en, inferred);
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

// Rank 2 stopped after one all-reduce, its heartbeat as fresh as its peers', and their next
// all-reduce failed with a remote error: the transport lost it, so it died. That is the alignment's
// inference, kept in the run's Inferred (the status list reads it), not written into the Engine:
// the same Engine gives the same verdict every time.
TEST(RulesTest, WhatARuleInfersIsKeptInItsRunNotInTheEngine) {
  Job job(3);
  job.ops(0, {{kTrain}, {kTrain}}, true).ops(1, {{kTrain}, {kTrain}}, true).ops(2, {{kTrain}});
  for (int r : {0, 1}) {
    format::EventRecord& lost = job.rank(r).events.back();
    lost.state = format::EventState::kFailed;
    lost.result = format::kNcclRemoteError;
    lost.setEndNs(lost.enqueueNs() + 1000);
  }
  const format::LoadedSet set = job.set();
  const DiagnoseOptions options;
  const CallSites sites(set.ranks, {});
  const Engine en(set, options, sites);
  EXPECT_FALSE(en.dead(2));  // by the recordings alone
  const NamedRule* stop = nullptr;
  for (const NamedRule& r : verdictRules())
    if (r.name == "divergence_or_stop") stop = &r;
  ASSERT_NE(stop, nullptr);
  Inferred inferred;
  const std::optional<Verdict> found = stop->find(en, inferred);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->cls, VerdictClass::kRankCrashed) << found->headline;
  EXPECT_EQ(found->ranks, std::vector<int>{2});
  EXPECT_EQ(inferred.dead, std::set<size_t>{2});
  EXPECT_TRUE(en.dead(2, inferred));
  EXPECT_FALSE(en.dead(2));

  const Verdict first = runRules(en), again = runRules(en);
  EXPECT_EQ(first.cls, VerdictClass::kRankCrashed) << first.headline;
  EXPECT_EQ(first.headline, again.headline);
  ASSERT_EQ(first.status.size(), 3u);
  EXPECT_EQ(first.status[2].state, RankState::kDead);
  EXPECT_EQ(first.status[2].detail,
            "killed from outside (no exit or crash mark, no dump); its peers lost the connection "
            "to it");
  EXPECT_EQ(first.status[2].detail, again.status[2].detail);
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
