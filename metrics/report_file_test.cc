#include "metrics/report_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <ctime>
#include <fstream>

#include "format/testing/temp_dir.h"

namespace ncclrec::metrics {
namespace {

using format::testing::TempDir;

constexpr const char* kReport = R"({"run_id": "job7", "attempt": 1, "reason": "hang",
  "verdict": {"class": "rank_gated_collective", "ranks": [3, 0, 3], "waiting": [1, 2]},
  "ranks": []})";

void write(const std::string& path, const std::string& text, time_t mtime = 0) {
  std::ofstream(path) << text;
  if (mtime != 0) {
    struct timespec times[2] = {{mtime, 0}, {mtime, 0}};
    ::utimensat(AT_FDCWD, path.c_str(), times, 0);
  }
}

TEST(ReportFileTest, ParsesTheVerdictClassAndItsRanks) {
  std::string problem;
  const auto r = parseReport(kReport, &problem);
  ASSERT_TRUE(r.has_value()) << problem;
  EXPECT_EQ(r->run_id, "job7");
  EXPECT_EQ(r->attempt, 1);
  EXPECT_EQ(r->reason, "hang");
  EXPECT_EQ(r->verdict_class, "rank_gated_collective");
  EXPECT_EQ(r->culprits, (std::vector<int>{0, 3}));
}

TEST(ReportFileTest, AReportWithoutAVerdictHasNoClass) {
  std::string problem;
  const auto r = parseReport(R"({"run_id": "j", "reason": "failure", "verdict": null})", &problem);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->verdict_class, "");
  EXPECT_TRUE(r->culprits.empty());
}

TEST(ReportFileTest, WhatIsNotAReportIsSaidNeverThrown) {
  std::string problem;
  EXPECT_FALSE(parseReport("{not json", &problem).has_value());
  EXPECT_EQ(problem, "not a JSON object");
  EXPECT_FALSE(parseReport("[1, 2]", &problem).has_value());
  EXPECT_FALSE(parseReport(R"({"run_id": 5})", &problem).has_value());
  EXPECT_EQ(problem, "no \"reason\": not a hang report");
  // Wrong types are left out, not fatal.
  const auto r =
      parseReport(R"({"reason": "hang", "attempt": "x", "verdict": {"ranks": "0"}})", &problem);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->attempt, 0);
  EXPECT_TRUE(r->culprits.empty());
}

TEST(ReportFileTest, ReadsReportJsonElseTheNewestNodeReport) {
  TempDir dir;
  ReportReader reader;
  std::string problem;
  EXPECT_FALSE(reader.read(dir.path(), &problem).has_value());
  EXPECT_EQ(problem, "");
  write(dir.path() + "/report.node1.json", R"({"run_id": "a", "reason": "hang"})", 1000);
  write(dir.path() + "/report.node2.json", R"({"run_id": "b", "reason": "hang"})", 2000);
  auto r = reader.read(dir.path(), &problem);
  ASSERT_TRUE(r.has_value()) << problem;
  EXPECT_EQ(r->run_id, "b");
  EXPECT_EQ(r->mtime_ns, 2000ll * 1000000000);
  write(dir.path() + "/report.json", kReport);
  r = reader.read(dir.path(), &problem);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->run_id, "job7");
  EXPECT_EQ(r->path, dir.path() + "/report.json");
}

TEST(ReportFileTest, ABrokenReportIsNamedAndReadAgainOnceRewritten) {
  TempDir dir;
  ReportReader reader;
  std::string problem;
  write(dir.path() + "/report.json", "{\"run_id\": \"j", 1000);  // being written
  EXPECT_FALSE(reader.read(dir.path(), &problem).has_value());
  EXPECT_EQ(problem, dir.path() + "/report.json: not a JSON object");
  EXPECT_FALSE(reader.read(dir.path(), &problem).has_value());  // unchanged: said again
  EXPECT_NE(problem, "");
  write(dir.path() + "/report.json", kReport, 2000);
  EXPECT_TRUE(reader.read(dir.path(), &problem).has_value());
  EXPECT_EQ(problem, "");
}

}  // namespace
}  // namespace ncclrec::metrics
