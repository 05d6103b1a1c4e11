#include "live/collector.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "format/dump_io.h"
#include "format/ncclrec.pb.h"
#include "format/testing/bbox_builder.h"
#include "format/testing/temp_dir.h"
#include "live/analysis.h"
#include "live/testing/fake_agent.h"
#include "live/testing/fixtures.h"
#include "live/testing/live_bbox.h"

namespace ncclrec::live {
namespace {

namespace fs = std::filesystem;
using format::testing::BboxBuilder;
using format::testing::TempDir;

constexpr uint64_t kComm = 0x5eed000000000001ull;
constexpr int64_t kNow = 1'700'000'100'000'000'000;

std::string thisHost() {
  char buf[256] = {};
  gethostname(buf, sizeof(buf) - 1);
  return buf;
}

// A black box of rank `rank` (this process's pid + rank, on this host) with `n` all-reduces
// whose stack is one frame in /opt/train at offset 0x1234.
BboxBuilder rankBox(int rank, int n) {
  BboxBuilder b;
  b.header()->pid = 100000 + rank;
  b.header()->global_rank = rank;
  b.header()->world_size = 2;
  b.header()->heartbeat_ns = kNow;
  std::strncpy(b.header()->host, thisHost().c_str(), sizeof(b.header()->host) - 1);
  b.addModule("/opt/train", 0x400000, 0x10000, {});
  const uint32_t sid = b.addStack({0x401234});
  format::CommRecord c{};
  c.comm_id = kComm;
  c.rank = rank;
  c.nranks = 2;
  c.coll_seq = uint64_t(n);
  b.addComm(c);
  for (int i = 1; i <= n; ++i) {
    format::Event e = format::testing::makeCollective(format::OpType::kAllReduce, kComm, rank, 2,
                                                      uint64_t(i), 8, kNow - 1000000 + i);
    e.stack_id = sid;
    b.addEvent(e);
  }
  return b;
}

std::vector<int> ranksOf(const Snapshot& s) {
  std::vector<int> out;
  for (const RankEntry& r : s.ranks) out.push_back(r.global_rank);
  return out;
}

TEST(Collector, ReadsEveryBlackBoxAndSaysWhichFilesItCouldNot) {
  TempDir dir;
  ASSERT_TRUE(rankBox(1, 3).writeTo(dir.file("h.2.bbox")));
  ASSERT_TRUE(rankBox(0, 4).writeTo(dir.file("h.1.bbox")));
  std::ofstream(dir.file("junk.bbox")) << std::string(8192, 'j');
  std::ofstream(dir.file("notes.txt")) << "ignored";
  Collector c({.dir = dir.path(), .hang_after_s = 60});
  const auto s = c.collect(kNow);
  EXPECT_EQ(ranksOf(*s), (std::vector<int>{0, 1}));
  ASSERT_EQ(s->notes.size(), 1u);
  EXPECT_EQ(s->notes[0], dir.file("junk.bbox") + ": not an ncclrec black box (bad magic)");
  EXPECT_EQ(s->source_label, dir.path());
  ASSERT_EQ(s->comms.size(), 1u);
  EXPECT_EQ(s->status[1].lag, 1u);  // rank 1 issued 3 of 4
}

TEST(Collector, ListsTheDirectoryAgainOnlyWhenItChanges) {
  TempDir dir;
  ASSERT_TRUE(rankBox(0, 1).writeTo(dir.file("h.1.bbox")));
  Collector c({.dir = dir.path()});
  c.collect(kNow);
  c.collect(kNow + 1);
  c.collect(kNow + 2);
  EXPECT_EQ(c.stats().dir_scans, 1u);
  ASSERT_TRUE(rankBox(1, 1).writeTo(dir.file("h.2.bbox")));
  // Directory times are coarse on some filesystems: make the change visible.
  fs::last_write_time(dir.path(), fs::file_time_type::clock::now() + std::chrono::seconds(2));
  const auto s = c.collect(kNow + 3);
  EXPECT_EQ(c.stats().dir_scans, 2u);
  EXPECT_EQ(s->ranks.size(), 2u);
}

TEST(Collector, ARankThatDidNotChangeSharesItsHistoryWithThePreviousSnapshot) {
  TempDir dir;
  auto live = testing::LiveBbox::create(dir.file("h.1.bbox"), rankBox(0, 2));
  ASSERT_TRUE(rankBox(1, 2).writeTo(dir.file("h.2.bbox")));
  Collector c({.dir = dir.path()});
  const auto a = c.collect(kNow);
  live->addEvent(
      format::testing::makeCollective(format::OpType::kAllReduce, kComm, 0, 2, 3, 8, kNow + 5));
  const auto b = c.collect(kNow + 10);
  EXPECT_NE(a->ranks[0].history, b->ranks[0].history);
  EXPECT_EQ(a->ranks[1].history, b->ranks[1].history);
  EXPECT_EQ(b->ranks[0].history->ops.size(), 3u);
}

TEST(Collector, AFileThatBecomesABlackBoxIsReadOnceItIsOne) {
  TempDir dir;
  std::ofstream(dir.file("h.1.bbox")).flush();  // created, not sized yet: no note
  Collector c({.dir = dir.path()});
  auto s = c.collect(kNow);
  EXPECT_TRUE(s->ranks.empty());
  EXPECT_TRUE(s->notes.empty());
  ASSERT_TRUE(rankBox(0, 1).writeTo(dir.file("h.1.bbox")));
  s = c.collect(kNow + 1);
  EXPECT_EQ(s->ranks.size(), 1u);
}

TEST(Collector, SaysWhenThereIsNothingToRead) {
  TempDir dir;
  Collector missing({.dir = dir.file("none")});
  EXPECT_EQ(missing.collect(kNow)->notes,
            (std::vector<std::string>{dir.file("none") + ": no such directory (yet)"}));
  Collector empty({.dir = dir.path()});
  EXPECT_EQ(empty.collect(kNow)->notes,
            (std::vector<std::string>{dir.path() + ": no black boxes (*.bbox) yet"}));
  ASSERT_TRUE(format::writeDumpFile(format::RankData{}, dir.file("h.1.1.exit.ncclrec.pb")).ok());
  fs::last_write_time(dir.path(), fs::file_time_type::clock::now() + std::chrono::seconds(2));
  EXPECT_EQ(
      empty.collect(kNow)->notes,
      (std::vector<std::string>{dir.path() + ": no black boxes (*.bbox), only 1 dump(s): the job "
                                             "ended; ncclrec-analyze reads them"}));
}

TEST(Collector, FollowsARunTreeToItsNewestAttempt) {
  TempDir dir;
  fs::create_directories(dir.file("run1/attempt_0"));
  fs::create_directories(dir.file("run1/attempt_1"));
  ASSERT_TRUE(rankBox(0, 1).writeTo(dir.file("run1/attempt_0/h.1.bbox")));
  ASSERT_TRUE(rankBox(5, 1).writeTo(dir.file("run1/attempt_1/h.6.bbox")));
  Collector c({.dir = dir.path()});
  const auto s = c.collect(kNow);
  EXPECT_EQ(ranksOf(*s), (std::vector<int>{5}));
  EXPECT_EQ(s->source_label, dir.path() + "/run1/attempt_1 (the only run, newest of 2 attempts)");
}

TEST(Collector, BorrowsFrameNamesFromADumpInTheDirectory) {
  TempDir dir;
  ASSERT_TRUE(rankBox(0, 1).writeTo(dir.file("h.1.bbox")));
  format::RankData d;
  d.pid = 99;
  d.host = "elsewhere";
  format::Stack st;
  st.id = 0;
  st.symbolized = true;
  st.frames.push_back({0x7000001234, "/other/path/train", 0x1234, "trainStep(int)", "t.cc", 7});
  d.stacks[0] = st;
  ASSERT_TRUE(format::writeDumpFile(d, dir.file("elsewhere.99.1.hang.ncclrec.pb")).ok());
  Collector c({.dir = dir.path()});
  auto s = c.collect(kNow);
  EXPECT_EQ(c.stats().dumps_read, 1u);
  const auto it = s->symbols->find(symbolKey("/opt/train", 0x1234));
  ASSERT_NE(it, s->symbols->end());
  EXPECT_EQ(it->second.function, "trainStep(int)");
  EXPECT_EQ(it->second.line, 7);
  // Nothing is left to name: no dump is read again.
  c.collect(kNow + 1);
  EXPECT_EQ(c.stats().dumps_read, 1u);
}

TEST(Collector, OneProcessSeenTwiceIsShownOnce) {
  TempDir dir;
  ASSERT_TRUE(rankBox(0, 1).writeTo(dir.file("h.1.bbox")));
  ASSERT_TRUE(rankBox(0, 1).writeTo(dir.file("copy.bbox")));
  Collector c({.dir = dir.path()});
  EXPECT_EQ(c.collect(kNow)->ranks.size(), 1u);
}

// rankBox() of run `run` for process `pid`, started at `start_ns`.
BboxBuilder runBox(int rank, const char* run, int pid, int64_t start_ns) {
  BboxBuilder b = rankBox(rank, 1);
  b.header()->pid = pid;
  b.header()->start_realtime_ns = start_ns;
  std::strncpy(b.header()->run_id, run, sizeof(b.header()->run_id) - 1);
  return b;
}

std::vector<int> pidsOf(const Snapshot& s) {
  std::vector<int> out;
  for (const RankEntry& r : s.ranks) out.push_back(r.pid);
  return out;
}

TEST(Collector, KeepsOnlyTheRanksOfOneRun) {
  TempDir dir;
  ASSERT_TRUE(runBox(0, "old", 200000, kNow - 900).writeTo(dir.file("h.200000.bbox")));
  ASSERT_TRUE(runBox(1, "old", 200001, kNow - 900).writeTo(dir.file("h.200001.bbox")));
  ASSERT_TRUE(runBox(0, "new", 200010, kNow - 100).writeTo(dir.file("h.200010.bbox")));
  EXPECT_EQ(pidsOf(*Collector({.dir = dir.path()}).collect(kNow)),
            (std::vector<int>{200000, 200010, 200001}));
  Collector c({.dir = dir.path(), .run_id = "new"});
  const auto s = c.collect(kNow);
  EXPECT_EQ(pidsOf(*s), (std::vector<int>{200010}));
  ASSERT_EQ(s->status.size(), 1u);  // analyzed over the run's ranks only
  EXPECT_EQ(pidsOf(*Collector({.dir = dir.path(), .run_id = "other"}).collect(kNow)),
            std::vector<int>{});
}

TEST(Collector, KeepsTheNewestProcessOfEachRankWhenAsked) {
  TempDir dir;
  ASSERT_TRUE(runBox(0, "r", 200000, kNow - 900).writeTo(dir.file("h.200000.bbox")));
  ASSERT_TRUE(runBox(0, "r", 200010, kNow - 100).writeTo(dir.file("h.200010.bbox")));
  ASSERT_TRUE(runBox(0, "r", 200005, kNow - 500).writeTo(dir.file("h.200005.bbox")));
  ASSERT_TRUE(runBox(1, "r", 200001, kNow - 900).writeTo(dir.file("h.200001.bbox")));
  EXPECT_EQ(pidsOf(*Collector({.dir = dir.path()}).collect(kNow)).size(), 4u);
  Collector c({.dir = dir.path(), .newest_per_rank = true});
  EXPECT_EQ(pidsOf(*c.collect(kNow)), (std::vector<int>{200010, 200001}));
}

TEST(Collector, AnAgentThatDoesNotAnswerIsANote) {
  Collector c({.connect = {"127.0.0.1:1"}, .token = "t", .remote_timeout_s = 0.5});
  const auto s = c.collect(kNow);
  EXPECT_TRUE(s->ranks.empty());
  ASSERT_EQ(s->notes.size(), 1u);
  EXPECT_NE(s->notes[0].find("agent 127.0.0.1:1: cannot connect"), std::string::npos);
  EXPECT_EQ(s->source_label, "agents (none answered)");
}

// An agent of host nodeB with rank 3, which lists one more agent of the job.
std::string nodeBReply(const std::string& request_bytes) {
  format::pb::TopRequest req;
  format::pb::TopReply reply;
  if (!req.ParseFromString(request_bytes) || req.token() != "t") {
    reply.set_error("wrong job token");
    return reply.SerializeAsString();
  }
  reply.set_host("nodeB");
  reply.set_now_ns(kNow);
  *reply.add_ranks()->mutable_data() =
      format::toProto(testing::makeRank(3, 4, "nodeB", testing::kCommWorld, 3, 1));
  reply.add_peers("127.0.0.1:1");
  return reply.SerializeAsString();
}

TEST(Collector, ReadsExactlyTheAgentsItIsGiven) {
  TempDir dir;
  ASSERT_TRUE(rankBox(0, 4).writeTo(dir.file("h.1.bbox")));
  testing::FakeAgent agent(nodeBReply);
  Collector c({.dir = dir.path(), .token = "t", .remote_timeout_s = 2, .follow_peers = false});
  EXPECT_EQ(ranksOf(*c.collect(kNow)), (std::vector<int>{0}));
  EXPECT_EQ(agent.requests(), 0);

  c.setAgents({agent.endpoint()});
  auto s = c.collect(kNow);
  EXPECT_EQ(ranksOf(*s), (std::vector<int>{0, 3}));
  EXPECT_EQ(s->source_label, dir.path() + " + agents nodeB:");
  EXPECT_EQ(c.agents(), 1u);        // the peer it listed is not followed
  c.setAgents({agent.endpoint()});  // kept, with its connection
  EXPECT_EQ(ranksOf(*c.collect(kNow)), (std::vector<int>{0, 3}));
  EXPECT_EQ(agent.requests(), 2);

  c.setAgents({});
  EXPECT_EQ(ranksOf(*c.collect(kNow)), (std::vector<int>{0}));
  EXPECT_EQ(c.agents(), 0u);
  EXPECT_EQ(agent.requests(), 2);
  c.setAgents({agent.endpoint()});  // asked again: a new connection
  EXPECT_EQ(ranksOf(*c.collect(kNow)), (std::vector<int>{0, 3}));
  EXPECT_EQ(agent.requests(), 3);
}

TEST(Collector, FollowsThePeersAnAgentListsUnlessToldNotTo) {
  testing::FakeAgent agent(nodeBReply);
  Collector c({.connect = {agent.endpoint()}, .token = "t", .remote_timeout_s = 0.5});
  (void)c.collect(kNow);
  EXPECT_EQ(c.agents(), 2u);
}

// Agents that answer only once every one of them was asked (or after 3 s): a collector that asked
// them one after the other would see the first time out.
class AgentsAnsweringTogether {
 public:
  explicit AgentsAnsweringTogether(int n) : n_(n) {
    for (int i = 0; i < n; ++i) {
      agents_.push_back(std::make_unique<testing::FakeAgent>([this, i](const std::string&) {
        std::unique_lock lock(mu_);
        ++asked_;
        cv_.notify_all();
        (void)cv_.wait_for(lock, std::chrono::seconds(3), [this] { return asked_ >= n_; });
        format::pb::TopReply reply;
        reply.set_host("node" + std::to_string(i + 1));
        reply.set_now_ns(kNow);
        *reply.add_ranks()->mutable_data() =
            format::toProto(testing::makeRank(i + 1, n_ + 1, "other", testing::kCommWorld, 3, 1));
        return reply.SerializeAsString();
      }));
    }
  }
  std::vector<std::string> endpoints() const {
    std::vector<std::string> out;
    for (const auto& a : agents_) out.push_back(a->endpoint());
    return out;
  }

 private:
  const int n_;
  std::mutex mu_;
  std::condition_variable cv_;
  int asked_ = 0;
  std::vector<std::unique_ptr<testing::FakeAgent>> agents_;
};

TEST(Collector, AsksItsAgentsAtOnce) {
  AgentsAnsweringTogether agents(3);
  Collector c({.token = "t", .remote_timeout_s = 1, .follow_peers = false});
  c.setAgents(agents.endpoints());
  const auto s = c.collect(kNow);
  EXPECT_EQ(ranksOf(*s), (std::vector<int>{1, 2, 3}));
  EXPECT_TRUE(s->notes.empty()) << s->notes.front();
  // Listed in the order of their endpoints (random ports here).
  for (const char* host : {"node1:", "node2:", "node3:"})
    EXPECT_NE(s->source_label.find(host), std::string::npos) << s->source_label;
}

}  // namespace
}  // namespace ncclrec::live
