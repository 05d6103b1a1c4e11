#include "format/report_json.h"

#include <gtest/gtest.h>

namespace ncclrec::format::report_json {
namespace {

TEST(ReportJson, ReadsTheVerdictAndEachWorkerWithAPid) {
  std::string problem;
  const auto d = parseReportJson(R"json({"run_id": "job7", "attempt": 2, "reason": "hang",
    "verdict": {"class": "rank_crashed", "ranks": [3, 1, 3]},
    "ranks": [{"rank": 0, "pid": 100, "running": true, "process_state": "stopped",
               "wchan": "do_signal_stop"},
              {"rank": 1, "pid": 101, "running": false, "ended": "SIGKILL", "host": "h1"},
              {"rank": 2, "pid": 102, "running": false, "ended": "SIGTERM", "stopped": true},
              {"rank": 3, "pid": null, "note": "no data from node 1 (host h2)"}]})json",
                                 &problem);
  ASSERT_TRUE(d.has_value()) << problem;
  EXPECT_EQ(d->run_id, "job7");
  EXPECT_EQ(d->attempt, 2);
  EXPECT_EQ(d->reason, "hang");
  EXPECT_EQ(d->verdict_class, "rank_crashed");
  EXPECT_EQ(d->culprits, (std::vector<int>{1, 3}));
  ASSERT_EQ(d->workers.size(), 3u);  // rank 3 has no pid: its node sent nothing
  EXPECT_EQ(d->workers[0], (Worker{0, 100, "", "", false, 'T', "do_signal_stop"}));
  EXPECT_EQ(d->workers[1], (Worker{1, 101, "h1", "SIGKILL", false, 0, ""}));
  EXPECT_EQ(d->workers[2], (Worker{2, 102, "", "SIGTERM", true, 0, ""}));
}

TEST(ReportJson, WhatIsNotAReportIsOneLineNeverAThrow) {
  std::string problem;
  EXPECT_FALSE(parseReportJson("{not json", &problem).has_value());
  EXPECT_EQ(problem, "not a JSON object");
  EXPECT_FALSE(parseReportJson("[1]", &problem).has_value());
  EXPECT_EQ(problem, "not a JSON object");
  // A document without a reason is still read: the launcher's facts need only its ranks.
  const auto ranks_only = parseReportJson(R"json({"ranks": [{"pid": 4}]})json", &problem);
  ASSERT_TRUE(ranks_only.has_value());
  EXPECT_TRUE(ranks_only->reason.empty());
  EXPECT_EQ(ranks_only->workers.size(), 1u);
  // Keys of the wrong type count as absent.
  const auto d = parseReportJson(R"json({"reason": "failure", "attempt": "2", "verdict": [],
    "ranks": [5, {"pid": "7"}, {"pid": 8, "ended": 9, "stopped": "yes", "process_state": "frozen",
               "wchan": 0}]})json",
                                 &problem);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->attempt, 0);
  EXPECT_EQ(d->verdict_class, "");
  ASSERT_EQ(d->workers.size(), 1u);
  EXPECT_EQ(d->workers[0], (Worker{-1, 8, "", "", false, 0, ""}));
}

TEST(ReportJson, ReadsEachNodeWithItsRanksAndHowLongItWasSilent) {
  std::string problem;
  const auto d = parseReportJson(R"json({"reason": "hang",
    "nodes": [{"node": 0, "host": "a", "dir": "/d", "files": 0, "data": true},
              {"node": 1, "host": "b", "dir": null, "files": 0, "data": false, "silent_s": 3.5},
              {"node": "2"}, 7, {"node": 2, "host": "c", "silent_s": "long"}],
    "ranks": [{"rank": 0, "node": 0, "host": "a", "pid": 10},
              {"rank": 2, "node": 1, "host": "b", "pid": null},
              {"rank": 3, "node": 1, "host": "b", "pid": null},
              {"rank": 1, "node": 0, "host": "a", "pid": 11},
              {"rank": 4, "node": 2, "host": "c", "pid": 12}, {"rank": 5, "pid": 13}]})json",
                                 &problem);
  ASSERT_TRUE(d.has_value()) << problem;
  ASSERT_EQ(d->nodes.size(), 3u);  // the entries without an integer "node" are left out
  EXPECT_EQ(d->nodes[0], (Node{0, "a", 0, {0, 1}}));
  EXPECT_EQ(d->nodes[1], (Node{1, "b", 3.5, {2, 3}}));
  EXPECT_EQ(d->nodes[2], (Node{2, "c", 0, {4}}));  // "silent_s" of the wrong type: heard from
  EXPECT_EQ(d->workers.size(), 4u);
}

TEST(ReportJson, NodeFileNames) {
  EXPECT_EQ(kFileName, "report.json");
  EXPECT_EQ(nodeFileName(3), "report.node3.json");
  EXPECT_TRUE(isNodeFileName("report.node12.json"));
  EXPECT_FALSE(isNodeFileName("report.node.json"));
  EXPECT_FALSE(isNodeFileName("report.nodeX.json"));
  EXPECT_FALSE(isNodeFileName("report.json"));
  EXPECT_FALSE(isNodeFileName("report.node1.json.tmp"));
}

}  // namespace
}  // namespace ncclrec::format::report_json
