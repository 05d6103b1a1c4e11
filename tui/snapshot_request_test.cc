#include "tui/snapshot_request.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "recorder/format/recording_files.h"
#include "recorder/format/testing/temp_dir.h"

namespace ncclrec::tui {
namespace {

RankEntry rank(const std::string& source, const std::string& run_id, Liveness liveness) {
  RankEntry r;
  r.source = source;
  r.run_id = run_id;
  r.liveness = liveness;
  return r;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(SnapshotRequest, WritesTheRequestFileForTheRunOfTheRanksShown) {
  format::testing::TempDir dir;
  Snapshot s;
  s.dir = dir.path();
  s.ranks = {rank(dir.file("a.bbox"), "run7", Liveness::kAlive),
             rank(dir.file("b.bbox"), "run7", Liveness::kAlive),
             rank(dir.file("c.bbox"), "run7", Liveness::kExited)};
  const std::string message = requestThreadSnapshots(s);
  EXPECT_NE(message.find("asked 2 running ranks for a thread snapshot"), std::string::npos)
      << message;
  const std::string path = dir.file(std::string(format::kSnapshotRequestFileName));
  const format::TriggerFile request = format::TriggerFile::parse(readFile(path));
  EXPECT_EQ(request.reason, "snapshot");
  EXPECT_EQ(request.run_id, "run7");
  EXPECT_TRUE(request.concerns("run7"));
  EXPECT_FALSE(request.concerns("run8"));
  // Never the trigger file: cxxrun would take it for a hang.
  EXPECT_EQ(readFile(dir.file(std::string(format::kTriggerFileName))), "");
}

TEST(SnapshotRequest, RanksOfSeveralRunsAreAllAsked) {
  format::testing::TempDir dir;
  Snapshot s;
  s.dir = dir.path();
  s.ranks = {rank(dir.file("a.bbox"), "run7", Liveness::kAlive),
             rank(dir.file("b.bbox"), "run8", Liveness::kAlive)};
  requestThreadSnapshots(s);
  const format::TriggerFile request =
      format::TriggerFile::parse(readFile(dir.file(std::string(format::kSnapshotRequestFileName))));
  EXPECT_EQ(request.run_id, "");
  EXPECT_TRUE(request.concerns("run8"));
}

TEST(SnapshotRequest, SaysWhyNothingWasAsked) {
  Snapshot remote;
  remote.ranks = {rank("agent node2:29400: /d/x.bbox", "run7", Liveness::kAlive)};
  EXPECT_NE(requestThreadSnapshots(remote).find("--connect cannot be asked"), std::string::npos);
  Snapshot unwritable;
  unwritable.dir = "/nonexistent/ncclrec-top-test";
  unwritable.ranks = {rank("/nonexistent/ncclrec-top-test/a.bbox", "r", Liveness::kAlive)};
  const std::string message = requestThreadSnapshots(unwritable);
  EXPECT_EQ(message.rfind("no thread snapshot asked: cannot write", 0), 0u) << message;
}

}  // namespace
}  // namespace ncclrec::tui
