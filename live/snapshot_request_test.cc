#include "live/snapshot_request.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "format/recording_files.h"
#include "format/testing/temp_dir.h"

namespace ncclrec::live {
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
  bool ask_agents = true;
  const std::string message = requestThreadSnapshots(s, &ask_agents);
  EXPECT_NE(message.find("asked 2 running ranks for a thread snapshot"), std::string::npos)
      << message;
  EXPECT_FALSE(ask_agents);
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
  bool ask_agents = false;
  requestThreadSnapshots(s, &ask_agents);
  const format::TriggerFile request =
      format::TriggerFile::parse(readFile(dir.file(std::string(format::kSnapshotRequestFileName))));
  EXPECT_EQ(request.run_id, "");
  EXPECT_TRUE(request.concerns("run8"));
}

TEST(SnapshotRequest, RanksSeenThroughAgentsAreAskedByTheirAgents) {
  format::testing::TempDir dir;
  Snapshot s;
  s.dir = dir.path();
  s.ranks = {rank(dir.file("a.bbox"), "run7", Liveness::kAlive),
             rank("agent node2:29400: /d/x.bbox", "run7", Liveness::kAlive),
             rank("agent node2:29400: /d/y.bbox", "run7", Liveness::kAlive)};
  bool ask_agents = false;
  const std::string message = requestThreadSnapshots(s, &ask_agents);
  EXPECT_TRUE(ask_agents);
  EXPECT_NE(message.find("asked 1 running rank for a thread snapshot"), std::string::npos)
      << message;
  EXPECT_NE(message.find("asking the agents of 2 ranks (--connect)"), std::string::npos) << message;
  Snapshot remote_only;
  remote_only.ranks = {rank("agent node2:29400: /d/x.bbox", "run7", Liveness::kAlive)};
  EXPECT_EQ(requestThreadSnapshots(remote_only, &ask_agents),
            "asking the agents of 1 rank (--connect) for a thread snapshot: their answers show "
            "in the notes");
  EXPECT_TRUE(ask_agents);
}

TEST(SnapshotRequest, SaysWhyNothingWasAsked) {
  bool ask_agents = true;
  EXPECT_EQ(requestThreadSnapshots(Snapshot(), &ask_agents),
            "no thread snapshot asked: no ranks shown");
  EXPECT_FALSE(ask_agents);
  Snapshot unwritable;
  unwritable.dir = "/nonexistent/ncclrec-top-test";
  unwritable.ranks = {rank("/nonexistent/ncclrec-top-test/a.bbox", "r", Liveness::kAlive)};
  const std::string message = requestThreadSnapshots(unwritable, &ask_agents);
  EXPECT_EQ(message.rfind("no thread snapshot asked: cannot write", 0), 0u) << message;
}

}  // namespace
}  // namespace ncclrec::live
