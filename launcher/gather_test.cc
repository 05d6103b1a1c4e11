#include "launcher/gather.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "format/testing/temp_dir.h"
#include "launcher/store_server.h"

namespace ncclrec::launcher {
namespace {

constexpr const char* kToken = "tok";
constexpr const char* kPrefix = "job/a0/recordings/1/";

std::string randomBytes(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(gen() & 0xff);
  return s;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class GatherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = StoreServer::start("127.0.0.1", 0, kToken);
    ASSERT_TRUE(s.ok()) << s.status().message();
    server_ = std::move(s).value();
    auto c =
        format::StoreClient::connect("127.0.0.1:" + std::to_string(server_->port()), kToken, 5);
    ASSERT_TRUE(c.ok()) << c.status().message();
    client_.emplace(std::move(c).value());
  }
  std::string write(const std::string& name, const std::string& bytes) {
    const std::string path = from_.file(name);
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  std::vector<report::WorkerInfo> workers() {
    std::vector<report::WorkerInfo> w(2);
    for (int i = 0; i < 2; ++i) {
      w[i].rank = 2 + i;
      w[i].local_rank = i;
      w[i].pid = 4242 + i;
      w[i].node = 1;
      w[i].host = "nodeB";
    }
    w[0].process_state = 'T';  // stopped: it could not dump
    w[0].wchan = "do_signal_stop";
    w[1].running = false;
    w[1].ended = "exit code 1";
    return w;
  }
  std::unique_ptr<StoreServer> server_;
  std::optional<format::StoreClient> client_;
  format::testing::TempDir from_, to_;
};

TEST_F(GatherTest, FilesLargerThanAStoreFrameArriveWholeWithTheWorkers) {
  // 2.5 chunks: more than the store's 1 MiB frame limit in one file.
  const std::string big = randomBytes(kChunkBytes * 2 + kChunkBytes / 2, 1);
  const std::string small = randomBytes(100, 2);
  const std::string empty;
  const std::vector<std::string> paths = {write("nodeB.4242.bbox", big),
                                          write("nodeB.4243.0.hang.ncclrec.pb", small),
                                          write("nodeB.4244.bbox", empty)};
  auto sent = sendRecordings(*client_, kPrefix, 1, "nodeB", workers(), paths);
  ASSERT_TRUE(sent.ok()) << sent.status().message();
  EXPECT_EQ(*sent, big.size() + small.size());

  const std::string dir = to_.path() + "/node1";
  auto got = receiveRecordings(*client_, kPrefix, dir);
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_TRUE(got->has_value());
  const NodeRecordings& n = **got;
  EXPECT_EQ(n.node_rank, 1);
  EXPECT_EQ(n.host, "nodeB");
  EXPECT_TRUE(n.warnings.empty()) << ::testing::PrintToString(n.warnings);
  ASSERT_EQ(n.files.size(), 3u);
  EXPECT_EQ(slurp(dir + "/nodeB.4242.bbox"), big);
  EXPECT_EQ(slurp(dir + "/nodeB.4243.0.hang.ncclrec.pb"), small);
  EXPECT_TRUE(std::filesystem::exists(dir + "/nodeB.4244.bbox"));
  ASSERT_EQ(n.workers.size(), 2u);
  EXPECT_EQ(n.workers[1].rank, 3);
  EXPECT_EQ(n.workers[1].local_rank, 1);
  EXPECT_EQ(n.workers[1].pid, 4243);
  EXPECT_FALSE(n.workers[1].running);
  EXPECT_EQ(n.workers[1].ended, "exit code 1");
  EXPECT_EQ(n.workers[1].host, "nodeB");
  EXPECT_EQ(n.workers[1].node, 1);
  EXPECT_EQ(n.workers[1].process_state, 0);
  EXPECT_EQ(n.workers[0].process_state, 'T');
  EXPECT_EQ(n.workers[0].wchan, "do_signal_stop");
  // The store is left clean: no chunk and no manifest stays behind.
  auto chunk = client_->tryGet(std::string(kPrefix) + "f0/c0");
  auto manifest = client_->tryGet(std::string(kPrefix) + "manifest");
  ASSERT_TRUE(chunk.ok() && manifest.ok());
  EXPECT_FALSE(chunk->has_value());
  EXPECT_FALSE(manifest->has_value());
}

TEST_F(GatherTest, NothingYetIsNotAnError) {
  auto got = receiveRecordings(*client_, kPrefix, to_.path());
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_FALSE(got->has_value());
}

TEST_F(GatherTest, ACorruptOrMissingChunkSkipsThatFileOnlyAndSaysSo) {
  const std::vector<std::string> paths = {write("h.1.bbox", randomBytes(kChunkBytes + 10, 3)),
                                          write("h.2.bbox", randomBytes(10, 4)),
                                          write("h.3.bbox", randomBytes(kChunkBytes + 10, 5))};
  ASSERT_TRUE(sendRecordings(*client_, kPrefix, 1, "h", workers(), paths).ok());
  // Same length, other bytes: only the checksum can tell.
  ASSERT_TRUE(client_->set(std::string(kPrefix) + "f0/c1", randomBytes(10, 99)).ok());
  ASSERT_TRUE(client_->remove(std::string(kPrefix) + "f2/c1").ok());
  auto got = receiveRecordings(*client_, kPrefix, to_.path());
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_TRUE(got->has_value());
  const NodeRecordings& n = **got;
  EXPECT_EQ(n.files, std::vector<std::string>{to_.file("h.2.bbox")});
  ASSERT_EQ(n.warnings.size(), 2u);
  EXPECT_EQ(n.warnings[0], "node 1 (host h): h.1.bbox: checksum mismatch, skipped");
  EXPECT_EQ(n.warnings[1], "node 1 (host h): h.3.bbox: chunk 1 of 2 missing, skipped");
  EXPECT_FALSE(std::filesystem::exists(to_.file("h.1.bbox")));
  EXPECT_FALSE(std::filesystem::exists(to_.file("h.3.bbox")));
}

TEST_F(GatherTest, AnUnreadableFileIsNamedByTheSender) {
  auto sent = sendRecordings(*client_, kPrefix, 1, "h", {}, {from_.file("h.9.bbox")});
  ASSERT_TRUE(sent.ok()) << sent.status().message();
  auto got = receiveRecordings(*client_, kPrefix, to_.path());
  ASSERT_TRUE(got.ok() && got->has_value());
  ASSERT_EQ((*got)->warnings.size(), 1u);
  EXPECT_EQ((*got)->warnings[0],
            "node 1 (host h): " + from_.file("h.9.bbox") + ": cannot be read, not sent");
  EXPECT_TRUE((*got)->files.empty());
}

// Whatever is in the store, node 0 never writes outside the directory, never throws and never
// takes a garbled manifest for data.
TEST_F(GatherTest, AHostileManifestCannotEscapeTheDirectory) {
  const std::string m = std::string(kPrefix) + "manifest";
  ASSERT_TRUE(client_->set(std::string(kPrefix) + "f0/c0", "x").ok());
  ASSERT_TRUE(client_
                  ->set(m, R"({"node":1,"host":"h","workers":[],"files":[
                   {"name":"../evil.bbox","size":1,"chunks":1,"fnv1a64":"0"},
                   {"name":"ok.bbox","size":"1","chunks":1},
                   {"name":"big.bbox","size":1,"chunks":99999999}]})")
                  .ok());
  auto got = receiveRecordings(*client_, kPrefix, to_.path() + "/in");
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_TRUE(got->has_value());
  EXPECT_TRUE((*got)->files.empty());
  EXPECT_EQ((*got)->warnings.size(), 3u) << ::testing::PrintToString((*got)->warnings);
  EXPECT_FALSE(std::filesystem::exists(to_.file("evil.bbox")));

  for (const char* garbled : {"not json", "[]", R"({"node":"1","workers":[],"files":[]})",
                              R"({"node":1,"workers":[{"rank":"x"}],"files":[]})"}) {
    ASSERT_TRUE(client_->set(m, garbled).ok());
    auto bad = receiveRecordings(*client_, kPrefix, to_.path());
    ASSERT_FALSE(bad.ok()) << garbled;
    EXPECT_NE(bad.status().message().find("the manifest at " + m), std::string::npos)
        << bad.status().message();
  }
}

TEST(Gather, Fnv1a64KnownValues) {
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_NE(fnv1a64("ab"), fnv1a64("ba"));
}

}  // namespace
}  // namespace ncclrec::launcher
