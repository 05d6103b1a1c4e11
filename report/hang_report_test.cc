#include "report/hang_report.h"

#include <gtest/gtest.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/clock.h"
#include "format/testing/bbox_builder.h"
#include "format/testing/temp_dir.h"

namespace ncclrec::report {
namespace {

using format::OpType;
using format::testing::BboxBuilder;
using format::testing::TempDir;

WorkerInfo worker(int rank, int pid, const std::string& ended = "", const std::string& host = "",
                  int node = 0) {
  WorkerInfo w;
  w.rank = rank;
  w.local_rank = rank;
  w.pid = pid;
  w.running = ended.empty();
  w.ended = ended;
  w.host = host;
  w.node = node;
  return w;
}

void writeStuckRank(const TempDir& dir, const std::string& host, int rank, int pid, int world,
                    uint64_t stuck_count) {
  const int64_t t0 = base::realtimeNs() - 5'000'000'000;
  BboxBuilder b;
  b.header()->pid = pid;
  b.header()->global_rank = rank;
  b.header()->world_size = world;
  std::strcpy(b.header()->host, host.c_str());
  b.header()->heartbeat_ns = base::realtimeNs();
  b.addEvent(format::testing::makeCollective(OpType::kAllReduce, 0xabc, rank, world, 1, 4096, t0));
  auto stuck = format::testing::makeCollective(OpType::kAllReduce, 0xabc, rank, world, 2,
                                               stuck_count, t0 + 1000);
  stuck.state = static_cast<uint8_t>(format::EventState::kEnqueued);
  stuck.end_ns = 0;
  b.addEvent(stuck);
  ASSERT_TRUE(b.writeTo(dir.file(host + "." + std::to_string(pid) + ".bbox")));
}

// Node 0 (hostA) ran ranks 0-1, stuck in their 2nd all-reduce of 4 ranks, recorded in `dir`;
// node 1 (hostB), ranks 2-3, sent nothing, and was not heard from for `silent_s` (0: it was).
HangReportInput nodeOneSentNothing(const TempDir& dir, double silent_s = 0) {
  writeStuckRank(dir, "hostA", 0, 700, 4, 4096);
  writeStuckRank(dir, "hostA", 1, 701, 4, 4096);
  HangReportInput in;
  in.run_id = "r";
  in.reason = ReportReason::kHang;
  in.dump_dir = dir.path();
  in.workers = {worker(0, 700, "", "hostA", 0), worker(1, 701, "", "hostA", 0)};
  for (int rank : {2, 3}) {
    WorkerInfo w = worker(rank, 0, "", "hostB", 1);
    w.no_data = true;
    in.workers.push_back(w);
  }
  in.nodes = {{0, "hostA", dir.path(), 0, false}, {1, "hostB", "", 0, true, silent_s}};
  return in;
}

TEST(HangReport, FindsDumpsAndBlackBoxesByPid) {
  TempDir dir;
  std::ofstream(dir.file("node.a.b.4242.bbox")) << "";
  std::ofstream(dir.file("node.a.b.4242.1.hang.ncclrec.pb")) << "";
  std::ofstream(dir.file("node.77.1.trigger.ncclrec.pb.tmp")) << "";
  EXPECT_TRUE(hasBlackBoxOf(dir.path(), 4242));
  EXPECT_FALSE(hasBlackBoxOf(dir.path(), 424));
  EXPECT_TRUE(hasDumpOf(dir.path(), 4242, 0));
  EXPECT_TRUE(hasDumpOf(dir.path(), 4242, 0, "hang"));
  EXPECT_FALSE(hasDumpOf(dir.path(), 4242, 0, "exit"));
  EXPECT_FALSE(
      hasDumpOf(dir.path(), 4242, base::realtimeNs() + 60'000'000'000));  // older than asked
  EXPECT_FALSE(hasDumpOf(dir.path(), 77, 0));                             // a temporary file
}

TEST(HangReport, TheRecordingToSendIsTheNewestDumpElseTheBlackBox) {
  TempDir dir;
  std::ofstream(dir.file("h.5.bbox")) << "";
  std::ofstream(dir.file("h.6.bbox")) << "";
  std::ofstream(dir.file("h.5.0.hang.ncclrec.pb")) << "";
  std::ofstream(dir.file("h.55.0.hang.ncclrec.pb")) << "";
  usleep(20000);
  std::ofstream(dir.file("h.5.1.exit.ncclrec.pb")) << "";
  EXPECT_EQ(recordingToSend(dir.path(), 5, 0), dir.file("h.5.1.exit.ncclrec.pb"));
  EXPECT_EQ(recordingToSend(dir.path(), 6, 0), dir.file("h.6.bbox"));
  EXPECT_EQ(recordingToSend(dir.path(), 5, base::realtimeNs() + 60'000'000'000),
            dir.file("h.5.bbox"));
  EXPECT_EQ(recordingToSend(dir.path(), 7, 0), "");
}

// Node 0's job-wide report: recordings of two hosts whose pids collide, and a node that sent
// nothing.
TEST(HangReport, JobWideReportMatchesWorkersByHostAndNamesSilentNodes) {
  TempDir dir, node1;
  writeStuckRank(dir, "hostA", 0, 700, 4, 4096);
  writeStuckRank(node1, "hostB", 1, 700, 4, 1);  // the same pid on another host
  HangReportInput in;
  in.run_id = "r";
  in.reason = ReportReason::kHang;
  in.dump_dir = dir.path();
  in.workers = {worker(0, 700, "", "hostA", 0), worker(1, 700, "", "hostB", 1)};
  for (int rank : {2, 3}) {
    WorkerInfo w = worker(rank, 0, "", "hostC", 2);
    w.no_data = true;
    in.workers.push_back(w);
  }
  in.nodes = {{0, "hostA", dir.path(), 0, false},
              {1, "hostB", node1.path(), 1, false},
              {2, "hostC", "", 0, true}};
  in.warnings = {"node 1 (host hostB): x.bbox: checksum mismatch, skipped"};
  std::ostringstream out;
  auto path = writeHangReport(in, out);
  ASSERT_TRUE(path.ok()) << path.status().message();
  EXPECT_NE(out.str().find("cxxrun: warning: no data from node 2 (host hostC): its ranks are "
                           "missing from the verdict"),
            std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("ncclrec-analyze --events " + dir.path() + " " + node1.path()),
            std::string::npos)
      << out.str();
  std::ifstream f(*path);
  const auto doc = nlohmann::json::parse(f);
  ASSERT_EQ(doc["ranks"].size(), 4u);
  EXPECT_EQ(doc["ranks"][0]["recording"]["host"], "hostA");
  EXPECT_EQ(doc["ranks"][0]["last_op"]["count"], 4096);
  EXPECT_EQ(doc["ranks"][1]["recording"]["host"], "hostB");
  EXPECT_EQ(doc["ranks"][1]["last_op"]["count"], 1);
  EXPECT_EQ(doc["ranks"][1]["node"], 1);
  EXPECT_TRUE(doc["ranks"][3]["recording"].is_null());
  EXPECT_EQ(doc["ranks"][3]["note"], "no data from node 2 (host hostC)");
  ASSERT_EQ(doc["nodes"].size(), 3u);
  EXPECT_EQ(doc["nodes"][1]["files"], 1);
  EXPECT_EQ(doc["nodes"][2]["data"], false);
  EXPECT_TRUE(doc["nodes"][2]["dir"].is_null());
  EXPECT_EQ(doc["warnings"].size(), 2u) << doc["warnings"].dump();
}

// A node that sent nothing (node 0 could not hear it) on a dump directory the nodes share: its
// ranks' black boxes are there, so they are in the verdict and report.json says so, rank by rank.
TEST(HangReport, ANodeThatSentNothingIsStillReadFromASharedDirectory) {
  TempDir dir;
  writeStuckRank(dir, "hostB", 2, 700, 4, 4096);  // node 1's, on the shared directory
  HangReportInput in = nodeOneSentNothing(dir);
  std::ostringstream out;
  auto path = writeHangReport(in, out);
  ASSERT_TRUE(path.ok()) << path.status().message();
  std::ifstream f(*path);
  const auto doc = nlohmann::json::parse(f);
  ASSERT_EQ(doc["ranks"].size(), 4u);
  EXPECT_EQ(doc["ranks"][2]["pid"], 700);
  EXPECT_EQ(doc["ranks"][2]["recording"]["host"], "hostB");
  EXPECT_EQ(doc["ranks"][2]["note"],
            "no data from node 1 (host hostB); its recording is in the shared directory");
  EXPECT_TRUE(doc["ranks"][3]["recording"].is_null());
  EXPECT_TRUE(doc["ranks"][3]["pid"].is_null());
  ASSERT_EQ(doc["warnings"].size(), 1u) << doc["warnings"].dump();
  EXPECT_EQ(doc["warnings"][0],
            "no data from node 1 (host hostB): 1 of its 2 ranks are missing from the verdict (the "
            "others' recordings are in the shared dump directory)");
  // Both of its ranks there: nothing is missing.
  writeStuckRank(dir, "hostB", 3, 701, 4, 4096);
  std::ostringstream again;
  path = writeHangReport(in, again);
  ASSERT_TRUE(path.ok()) << path.status().message();
  EXPECT_NE(again.str().find("cxxrun: warning: no data from node 1 (host hostB); its ranks' "
                             "recordings are in the dump directory the nodes share, and in the "
                             "verdict"),
            std::string::npos)
      << again.str();
}

// Node 0 could no longer hear node 1 (node-local directories): its ranks wait for node 1's, and
// the verdict names that node from the launcher's fact, which report.json keeps for later readers.
TEST(HangReport, ASilentNodeWhoseRanksTheOthersWaitForIsTheVerdict) {
  TempDir dir;
  HangReportInput in = nodeOneSentNothing(dir, 3.2);
  std::ostringstream out;
  auto path = writeHangReport(in, out);
  ASSERT_TRUE(path.ok()) << path.status().message();
  EXPECT_NE(out.str().find("node_unreachable: node 1 (host hostB, ranks 2-3) not heard from for "
                           "3.2 s; ranks 0-1 wait for them in ncclAllReduce #2 on comm "),
            std::string::npos)
      << out.str();
  std::ifstream f(*path);
  std::stringstream text;
  text << f.rdbuf();
  const auto raw = nlohmann::json::parse(text.str());
  EXPECT_EQ(raw["verdict"]["class"], "node_unreachable");
  EXPECT_EQ(raw["verdict"]["ranks"], nlohmann::json::array({2, 3}));
  EXPECT_EQ(raw["nodes"][1]["silent_s"], 3.2);
  EXPECT_FALSE(raw["nodes"][0].contains("silent_s"));
  std::string problem;
  const auto doc = format::report_json::parseReportJson(text.str(), &problem);
  ASSERT_TRUE(doc.has_value()) << problem;
  ASSERT_EQ(doc->nodes.size(), 2u);
  EXPECT_EQ(doc->nodes[1], (format::report_json::Node{1, "hostB", 3.2, {2, 3}}));
  // Not heard from, but not for its silence (the store went away): "no data", as before.
  in.nodes[1].silent_s = 0;
  std::ostringstream before;
  ASSERT_TRUE(writeHangReport(in, before).ok());
  EXPECT_NE(before.str().find("undecided: ranks 0-1 wait in ncclAllReduce #2"), std::string::npos)
      << before.str();
}

// What the report writes, the readers of other processes read back (format/report_json.h).
TEST(HangReport, ItsReadersReadBackWhatItWrites) {
  TempDir dir;
  writeStuckRank(dir, "hostA", 0, 700, 2, 4096);
  writeStuckRank(dir, "hostA", 1, 701, 2, 1);
  HangReportInput in;
  in.run_id = "job9";
  in.attempt = 1;
  in.reason = ReportReason::kHang;
  in.dump_dir = dir.path();
  in.workers = {worker(0, 700), worker(1, 701, "SIGKILL")};
  in.workers[1].stopped = true;
  std::ostringstream out;
  auto path = writeHangReport(in, out);
  ASSERT_TRUE(path.ok()) << path.status().message();
  std::ifstream f(*path);
  std::stringstream text;
  text << f.rdbuf();
  std::string problem;
  const auto doc = format::report_json::parseReportJson(text.str(), &problem);
  ASSERT_TRUE(doc.has_value()) << problem;
  EXPECT_EQ(doc->run_id, "job9");
  EXPECT_EQ(doc->attempt, 1);
  EXPECT_EQ(doc->reason, "hang");
  const auto raw = nlohmann::json::parse(text.str());
  ASSERT_TRUE(raw["verdict"].is_object()) << text.str();
  EXPECT_EQ(doc->verdict_class, raw["verdict"]["class"].get<std::string>());
  EXPECT_FALSE(doc->verdict_class.empty());
  std::vector<int> ranks = raw["verdict"]["ranks"].get<std::vector<int>>();
  std::sort(ranks.begin(), ranks.end());
  EXPECT_EQ(doc->culprits, ranks);
  ASSERT_EQ(doc->workers.size(), 2u);
  EXPECT_EQ(doc->workers[0], (format::report_json::Worker{0, 700, "", "", false}));
  EXPECT_EQ(doc->workers[1], (format::report_json::Worker{1, 701, "", "SIGKILL", true}));
}

TEST(HangReport, TableAndJsonNameEachRanksLastOp) {
  TempDir dir;
  const int64_t t0 = base::realtimeNs() - 5'000'000'000;
  for (int rank = 0; rank < 2; ++rank) {
    BboxBuilder b;
    b.header()->pid = 1000 + rank;
    b.header()->global_rank = rank;
    b.header()->world_size = 3;
    std::strcpy(b.header()->host, "node");
    b.header()->heartbeat_ns = base::realtimeNs();
    b.addEvent(format::testing::makeCollective(OpType::kAllReduce, 0xabc, rank, 3, 1, 4096, t0));
    auto stuck = format::testing::makeCollective(OpType::kAllReduce, 0xabc, rank, 3, 2,
                                                 rank == 0 ? 1 : 4096, t0 + 1000);
    stuck.state = static_cast<uint8_t>(format::EventState::kEnqueued);
    stuck.end_ns = 0;
    b.addEvent(stuck);
    ASSERT_TRUE(b.writeTo(dir.file("node." + std::to_string(1000 + rank) + ".bbox")));
  }
  HangReportInput in;
  in.run_id = "r1";
  in.reason = ReportReason::kHang;
  in.trigger_text = "run_id=r1\nhost=node\npid=1000\nrank=0\nreason=hang\ndetail=op #2 stuck\n";
  in.dump_dir = dir.path();
  in.workers = {worker(0, 1000), worker(1, 1001), worker(2, 1002, "SIGKILL")};
  std::ostringstream out;
  auto path = writeHangReport(in, out);
  ASSERT_TRUE(path.ok()) << path.status().message();
  const std::string text = out.str();
  EXPECT_NE(text.find("hang reported (run r1, attempt 0) by rank 0: op #2 stuck"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("cxxrun: rank 2 (pid 1002) left no recording (SIGKILL)"), std::string::npos)
      << text;
  std::ifstream f(*path);
  const auto doc = nlohmann::json::parse(f);
  EXPECT_EQ(doc["reason"], "hang");
  ASSERT_EQ(doc["ranks"].size(), 3u);
  EXPECT_EQ(doc["ranks"][0]["last_op"]["op"], "ncclAllReduce");
  EXPECT_EQ(doc["ranks"][0]["last_op"]["op_seq"], 2);
  EXPECT_EQ(doc["ranks"][0]["last_op"]["count"], 1);
  EXPECT_EQ(doc["ranks"][1]["last_op"]["count"], 4096);
  EXPECT_GT(doc["ranks"][1]["last_op"]["age_ns"].get<int64_t>(), 4'000'000'000);
  EXPECT_TRUE(doc["ranks"][2]["recording"].is_null());
  // The analyzer's verdict is there, whatever it concludes from two ranks of three.
  EXPECT_TRUE(doc["verdict"].is_object()) << doc.dump(2);
  EXPECT_TRUE(doc["verdict"]["class"].is_string());
  EXPECT_EQ(doc["ranks"][2]["ended"], "SIGKILL");
}

TEST(HangReport, AFailureReportNamesTheFirstFailureNotTheTrigger) {
  TempDir dir;
  writeStuckRank(dir, "node", 0, 1000, 2, 4096);
  HangReportInput in;
  in.run_id = "f1";
  in.reason = ReportReason::kFailure;
  in.failure = "rank 1 on node, exit code 1";
  in.trigger_text = "run_id=f1\nhost=node\npid=1\nrank=-1\nreason=failure\ndetail=worker failed\n";
  in.dump_dir = dir.path();
  in.workers = {worker(0, 1000, "SIGTERM"), worker(1, 1001, "exit code 1")};
  std::ostringstream out;
  auto path = writeHangReport(in, out);
  ASSERT_TRUE(path.ok()) << path.status().message();
  const std::string text = out.str();
  EXPECT_EQ(
      text.rfind("cxxrun: verdict after the worker failure (run f1, attempt 0; first failure: "
                 "rank 1 on node, exit code 1)\n",
                 0),
      0u)
      << text;
  EXPECT_EQ(text.find("worker failed"), std::string::npos) << text;
  EXPECT_NE(text.find("cxxrun: rank 1 (pid 1001) left no recording (exit code 1)"),
            std::string::npos)
      << text;
  std::ifstream f(*path);
  const auto doc = nlohmann::json::parse(f);
  EXPECT_EQ(doc["reason"], "failure");
  EXPECT_EQ(doc["failure"], "rank 1 on node, exit code 1");
  EXPECT_TRUE(doc["verdict"].is_object()) << doc.dump(2);
}

TEST(HangReport, AnEndReportSaysHowTheJobEnded) {
  TempDir dir;
  writeStuckRank(dir, "node", 0, 1000, 2, 4096);
  HangReportInput in;
  in.run_id = "e1";
  in.reason = ReportReason::kEnded;
  in.ended = "exit code 1";
  in.dump_dir = dir.path();
  in.workers = {worker(0, 1000, "exited")};
  in.tool = "ncclrec";
  std::ostringstream out;
  auto path = writeHangReport(in, out);
  ASSERT_TRUE(path.ok()) << path.status().message();
  EXPECT_EQ(
      out.str().rfind("ncclrec: verdict after the job ended (run e1, attempt 0; exit code 1)\n", 0),
      0u)
      << out.str();
  std::ifstream f(*path);
  const auto doc = nlohmann::json::parse(f);
  EXPECT_EQ(doc["reason"], "ended");
  EXPECT_EQ(doc["ended"], "exit code 1");
  EXPECT_FALSE(doc.contains("failure"));
  EXPECT_TRUE(doc["verdict"].is_object()) << doc.dump(2);
}

TEST(HangReport, EmptyDirectoryStillGetsAReport) {
  TempDir dir;
  HangReportInput in;
  in.reason = ReportReason::kInterrupt;
  in.dump_dir = dir.path();
  in.workers = {worker(0, 1)};
  std::ostringstream out;
  auto path = writeHangReport(in, out);
  ASSERT_TRUE(path.ok());
  // No recording, no verdict: the launcher's own table.
  EXPECT_NE(out.str().find("rank  pid"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("none            (no NCCL call recorded)"), std::string::npos)
      << out.str();
  std::ifstream f(*path);
  EXPECT_FALSE(nlohmann::json::parse(f)["warnings"].empty());
}

TEST(HangReport, UnwritableDirectoryIsOneError) {
  HangReportInput in;
  in.dump_dir = "/proc/no-such-dir";
  std::ostringstream out;
  auto path = writeHangReport(in, out);
  ASSERT_FALSE(path.ok());
  EXPECT_NE(path.status().message().find("report.json"), std::string::npos);
}

}  // namespace
}  // namespace ncclrec::report
