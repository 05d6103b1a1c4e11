// What the launcher saw of the processes (launcher_facts.h): a rank killed by SIGKILL whose peers
// dumped before its heartbeat went stale (faultgen seeds 22, 205, 849, 909).
#include "analyzer/launcher_facts.h"

#include <gtest/gtest.h>

#include <fstream>
#include <vector>

#include "analyzer/diagnose.h"
#include "analyzer/testing/job_builder.h"
#include "format/testing/temp_dir.h"

namespace ncclrec::analyzer {
namespace {

using namespace testing;  // Job, Op, the call sites (analyzer/testing/job_builder.h)

// Ranks 0-2 wait in their 3rd all-reduce; rank 3 left after 2 with nothing to say why, 0.5 s
// before the others dumped (its heartbeat is fresh).
Job killedJob() {
  Job job(4);
  for (int r = 0; r < 3; ++r) job.ops(r, repeat({kTrain}, 3), true);
  job.ops(3, repeat({kTrain}, 2));
  for (int r = 0; r < 3; ++r) job.rank(r).dump_ns = kT0 + 100 * kSec;
  return job;
}

TEST(LauncherFactsTest, ARankTheLauncherSawKilledCrashed) {
  format::LoadedSet set = killedJob().set();
  EXPECT_EQ(diagnose(set).cls, VerdictClass::kRankStuckInHost);
  applyWorkerFacts(set, {{103, "", 9, 0, ""}});
  const Verdict v = diagnose(set);
  EXPECT_EQ(v.cls, VerdictClass::kRankCrashed) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{3});
  EXPECT_NE(v.headline.find("rank 3 crashed (SIGKILL)"), std::string::npos) << v.headline;
}

TEST(LauncherFactsTest, ARankThatDumpedOrMarkedItsEndKeepsItsOwnRecord) {
  // A rank that dumped was alive then (the launcher stops ranks after their dumps); one that
  // left an exit mark or a fatal-signal mark says what happened itself; another host's pid is
  // another process.
  for (int c = 0; c < 4; ++c) {
    format::LoadedSet set = killedJob().set();
    format::RankData& r3 = set.ranks[3];
    r3.host = "node-a";
    if (c == 0) r3.dump_ns = kT0 + 100 * kSec;
    if (c == 1) r3.exited = true;
    if (c == 2) r3.fatal_signal = 11;
    applyWorkerFacts(set, {{103, c == 3 ? "node-b" : "node-a", 9, 0, ""}});
    EXPECT_EQ(set.ranks[3].fatal_signal, c == 2 ? 11 : 0) << c;
  }
}

TEST(LauncherFactsTest, EndsAreReadFromCxxrunsReport) {
  format::testing::TempDir dir;
  std::ofstream(dir.file("report.json")) << R"({"ranks": [{"rank": 0, "pid": 100, "running": true},
                       {"rank": 3, "pid": 103, "running": false, "ended": "SIGKILL"},
                       {"rank": 2, "pid": 102, "running": false, "ended": "exit code 1"},
                       {"rank": 1, "pid": 101, "host": "node-b", "ended": "SIGSEGV"},
                       {"rank": 4, "pid": 104, "ended": "SIGTERM", "stopped": true},
                       {"rank": 5, "pid": 105, "running": true, "process_state": "stopped",
                        "wchan": "do_signal_stop"}]})";
  const std::vector<WorkerFacts> ends = workerFactsFromReport(dir.path());
  ASSERT_EQ(ends.size(), 3u);
  EXPECT_EQ(ends[0].pid, 103);
  EXPECT_EQ(ends[0].signal, 9);
  EXPECT_EQ(ends[1].host, "node-b");
  EXPECT_EQ(ends[1].signal, 11);
  EXPECT_EQ(ends[2].pid, 105);
  EXPECT_EQ(ends[2].signal, 0);
  EXPECT_EQ(ends[2].process_state, 'T');
  EXPECT_EQ(ends[2].wchan, "do_signal_stop");
  // No report, or not one of cxxrun's: no facts, no failure.
  format::testing::TempDir empty;
  EXPECT_TRUE(workerFactsFromReport(empty.path()).empty());
  std::ofstream(empty.file("report.json")) << "{not json";
  EXPECT_TRUE(workerFactsFromReport(empty.path()).empty());
}

TEST(LauncherFactsTest, SilentNodesAreReadFromNodeZerosReport) {
  format::testing::TempDir dir;
  std::ofstream(dir.file("report.json")) << R"({"reason": "hang",
    "nodes": [{"node": 0, "host": "a", "data": true},
              {"node": 1, "host": "b", "data": false, "silent_s": 3.2},
              {"node": 2, "host": "c", "data": false}],
    "ranks": [{"rank": 0, "node": 0, "pid": 10}, {"rank": 1, "node": 1, "pid": null},
              {"rank": 2, "node": 2, "pid": null}]})";
  const std::vector<format::SilentNode> silent = silentNodesFromReport(dir.path());
  ASSERT_EQ(silent.size(), 1u);  // node 2 sent nothing, but was heard from
  EXPECT_EQ(silent[0].node, 1);
  EXPECT_EQ(silent[0].host, "b");
  EXPECT_DOUBLE_EQ(silent[0].silent_s, 3.2);
  EXPECT_EQ(silent[0].ranks, std::vector<int>{1});
  format::testing::TempDir empty;
  EXPECT_TRUE(silentNodesFromReport(empty.path()).empty());
}

}  // namespace
}  // namespace ncclrec::analyzer
