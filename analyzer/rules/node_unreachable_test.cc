// A node node 0 could no longer hear from while the ranks it sees wait for that node's ranks
// (rules/node_unreachable.h): named from the launcher's fact (LoadedSet::silent_nodes).
#include "analyzer/rules/node_unreachable.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "analyzer/diagnose.h"
#include "analyzer/testing/job_builder.h"

namespace ncclrec::analyzer {
namespace {

using namespace testing;  // Job, Op, the call sites (analyzer/testing/job_builder.h)

// Four ranks, two a node, every one in its 3rd all-reduce from trainStep(); only the ranks of
// `kept` were read (node 0's directory).
format::LoadedSet nodeZeroView(std::vector<int> kept, int world = 4) {
  Job job(world);
  for (int r = 0; r < world; ++r) job.ops(r, repeat({kTrain}, 3), true);
  format::LoadedSet set = job.set();
  std::erase_if(set.ranks, [&](const format::RankData& r) {
    return std::find(kept.begin(), kept.end(), r.global_rank) == kept.end();
  });
  return set;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(NodeUnreachableTest, TheSilentNodeIsNamedAndItsRanksAreTheCulprits) {
  format::LoadedSet set = nodeZeroView({0, 1});
  EXPECT_EQ(diagnose(set).cls, VerdictClass::kUndecided);  // without the launcher's fact
  set.silent_nodes.push_back({1, "nodeb", 3.04, {2, 3}});
  const Verdict v = diagnose(set);
  EXPECT_EQ(v.cls, VerdictClass::kNodeUnreachable) << v.headline;
  EXPECT_EQ(v.ranks, (std::vector<int>{2, 3}));
  EXPECT_EQ(v.waiting, (std::vector<int>{0, 1}));
  EXPECT_EQ(v.comm_id, kComm);
  EXPECT_EQ(v.seq, 3u);
  EXPECT_EQ(v.headline,
            "node 1 (host nodeb, ranks 2-3) not heard from for 3.0 s; ranks 0-1 wait for them in "
            "ncclAllReduce #3 on comm c0ffee00 and agree on every op before it: the network "
            "between node 1 and node 0 stopped, or that node did");
  ASSERT_FALSE(v.missing.empty());
  EXPECT_TRUE(has(v.missing.front(), "show whether ranks 2-3 still ran")) << v.missing.front();
  bool said = false;
  for (const RankStatus& s : v.status) {
    if (s.rank != 2) continue;
    EXPECT_EQ(s.state, RankState::kNoData);
    EXPECT_EQ(s.detail,
              "no black box or dump: its node 1 (host nodeb) was not heard from for 3.0 s");
    said = true;
  }
  EXPECT_TRUE(said);
  EXPECT_EQ(exitCodeFor(v.cls), exitCodeFor(VerdictClass::kRankNotRunning));
}

TEST(NodeUnreachableTest, SeveralSilentNodesAndARankWithNoDataElsewhere) {
  // Ranks 0-1 on node 0; node 1 (ranks 2-3) and node 3 (ranks 6-7) silent; node 2 (ranks 4-5)
  // heard from, yet rank 5's recording is missing.
  format::LoadedSet set = nodeZeroView({0, 1, 4}, 8);
  set.silent_nodes.push_back({1, "nodeb", 3.0, {2, 3}});
  set.silent_nodes.push_back({3, "noded", 4.26, {6, 7}});
  const Verdict v = diagnose(set);
  EXPECT_EQ(v.cls, VerdictClass::kNodeUnreachable) << v.headline;
  EXPECT_EQ(v.ranks, (std::vector<int>{2, 3, 6, 7}));
  EXPECT_EQ(v.waiting, (std::vector<int>{0, 1, 4}));
  EXPECT_TRUE(has(v.headline,
                  "node 1 (host nodeb, ranks 2-3) not heard from for 3.0 s, node 3 (host noded, "
                  "ranks 6-7) not heard from for 4.3 s; ranks 0-1,4 wait for them in"))
      << v.headline;
  EXPECT_TRUE(has(v.headline,
                  "the network between those nodes and node 0 stopped, or those "
                  "nodes did; no data for rank 5"))
      << v.headline;
}

TEST(NodeUnreachableTest, RanksThatGotThroughTheOpOfARingStillWaitForTheNode) {
  // Rank 1 got all its data of #3 and waits in #4; rank 0 still waits in #3.
  Job job(4);
  job.ops(0, repeat({kTrain}, 3), true).ops(1, repeat({kTrain}, 4), true);
  format::LoadedSet set = job.set();
  set.ranks.resize(2);
  set.silent_nodes.push_back({1, "nodeb", 3.0, {2, 3}});
  const Verdict v = diagnose(set);
  EXPECT_EQ(v.cls, VerdictClass::kNodeUnreachable) << v.headline;
  EXPECT_EQ(v.seq, 3u);
  EXPECT_TRUE(has(v.headline,
                  "; ranks 0-1 wait for them in ncclAllReduce #3 on comm c0ffee00 "
                  "(rank 1 got through it and waits in #4) and agree on every op"))
      << v.headline;
}

TEST(NodeUnreachableTest, NotWhenTheSilentNodesRanksWereReadOrNobodyWaitsForThem) {
  // A dump directory the nodes share: node 1's ranks were read, the verdict is theirs to give.
  format::LoadedSet shared = nodeZeroView({0, 1, 2, 3});
  shared.silent_nodes.push_back({1, "nodeb", 3.0, {2, 3}});
  EXPECT_NE(diagnose(shared).cls, VerdictClass::kNodeUnreachable);

  // The ranks read wait in a communicator of their own (two ranks, both read): they do not wait
  // for the silent node.
  Job job(2);
  for (int r = 0; r < 2; ++r) job.ops(r, repeat({kTrain}, 3), true);
  format::LoadedSet local = job.set();
  for (format::RankData& r : local.ranks) r.world_size = 4;
  local.silent_nodes.push_back({1, "nodeb", 3.0, {2, 3}});
  EXPECT_NE(diagnose(local).cls, VerdictClass::kNodeUnreachable);

  // A rank of node 0 still in host code: not every rank read waits in the op.
  Job ahead(4);
  ahead.ops(0, repeat({kTrain}, 3), true).ops(1, repeat({kTrain}, 2));
  format::LoadedSet partial = ahead.set();
  partial.ranks.resize(2);
  partial.silent_nodes.push_back({1, "nodeb", 3.0, {2, 3}});
  EXPECT_NE(diagnose(partial).cls, VerdictClass::kNodeUnreachable);
}

}  // namespace
}  // namespace ncclrec::analyzer
