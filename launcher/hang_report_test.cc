#include "launcher/hang_report.h"

#include <gtest/gtest.h>
#include <time.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "recorder/format/testing/bbox_builder.h"
#include "recorder/format/testing/temp_dir.h"

namespace ncclrec::launcher {
namespace {

using format::OpType;
using format::testing::BboxBuilder;
using format::testing::TempDir;

int64_t nowNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
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
  EXPECT_FALSE(hasDumpOf(dir.path(), 4242, nowNs() + 60'000'000'000));  // older than asked
  EXPECT_FALSE(hasDumpOf(dir.path(), 77, 0));                           // a temporary file
}

TEST(HangReport, TableAndJsonNameEachRanksLastOp) {
  TempDir dir;
  const int64_t t0 = nowNs() - 5'000'000'000;
  for (int rank = 0; rank < 2; ++rank) {
    BboxBuilder b;
    b.header()->pid = 1000 + rank;
    b.header()->global_rank = rank;
    b.header()->world_size = 3;
    std::strcpy(b.header()->host, "node");
    b.header()->heartbeat_ns = nowNs();
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
  in.reason = "hang";
  in.trigger_text = "run_id=r1\nhost=node\npid=1000\nrank=0\nreason=hang\ndetail=op #2 stuck\n";
  in.dump_dir = dir.path();
  in.workers = {{0, 0, 1000, true, ""}, {1, 1, 1001, true, ""}, {2, 2, 1002, false, "SIGKILL"}};
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

TEST(HangReport, EmptyDirectoryStillGetsAReport) {
  TempDir dir;
  HangReportInput in;
  in.reason = "interrupt";
  in.dump_dir = dir.path();
  in.workers = {{0, 0, 1, true, ""}};
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
}  // namespace ncclrec::launcher
