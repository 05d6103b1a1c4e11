// Multi-node jobs from several cxxrun agents on one machine, meeting through the store on
// 127.0.0.1: rendezvous, node ranks, fail-fast and hang dumps across nodes.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/process.h"

namespace {

using namespace std::chrono_literals;
using ncclrec::support::Process;
using ncclrec::support::ProcessResult;
using ncclrec::support::SpawnOptions;

int freePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

SpawnOptions agent(const std::string& dumps, int port, std::vector<std::string> flags,
                   std::vector<std::string> program) {
  SpawnOptions o;
  o.argv = {CXXRUN_BIN,           "--nnodes", "2", "--nproc-per-node", "2", "--master-port",
            std::to_string(port), "--run-id", "mn"};
  o.argv.insert(o.argv.end(), flags.begin(), flags.end());
  o.argv.insert(o.argv.end(), program.begin(), program.end());
  o.env = {{"NCCLREC_DIR", dumps}};
  o.unset_env = {"LD_PRELOAD", "CXXRUN_STORE", "CXXRUN_TOKEN",
                 "RANK",       "WORLD_SIZE",   "SLURM_JOB_ID"};
  return o;
}

std::unique_ptr<Process> start(const SpawnOptions& o) {
  std::string error;
  auto p = Process::start(o, &error);
  EXPECT_NE(p, nullptr) << error;
  return p;
}

TEST(MultiNode, TwoAgentsMeetAndNumberTheirRanksAcrossNodes) {
  ncclrec::support::TempDir dir;
  const int port = freePort();
  // The first agent hosts the store and becomes node 0; the second joins as node 1.
  auto a = start(agent(dir.path(), port, {}, {CXXRUN_TEST_WORKER, "env"}));
  std::this_thread::sleep_for(200ms);
  auto b = start(agent(dir.path(), port, {}, {CXXRUN_TEST_WORKER, "env"}));
  const ProcessResult ra = a->wait(60s), rb = b->wait(60s);
  ASSERT_TRUE(ra.exitedWith(0)) << ra.describe();
  ASSERT_TRUE(rb.exitedWith(0)) << rb.describe();
  EXPECT_NE(ra.err.find("cxxrun: node rank 0 of 2"), std::string::npos) << ra.err;
  EXPECT_NE(rb.err.find("cxxrun: node rank 1 of 2"), std::string::npos) << rb.err;
  std::smatch m;
  const std::regex port_re("MASTER_PORT=([0-9]+)");
  ASSERT_TRUE(std::regex_search(ra.out, m, port_re)) << ra.out;
  const std::string master_port = m[1];
  for (int rank = 0; rank < 4; ++rank) {
    const ProcessResult& r = rank < 2 ? ra : rb;
    const std::string rk = std::to_string(rank);
    const std::regex line(
        "\\[rank" + rk + "\\]:RANK=" + rk + " LOCAL_RANK=" + std::to_string(rank % 2) +
        " WORLD_SIZE=4 LOCAL_WORLD_SIZE=2 GROUP_RANK=" + std::to_string(rank / 2) +
        " GROUP_WORLD_SIZE=2 ROLE_RANK=" + rk +
        " ROLE_WORLD_SIZE=4 MASTER_ADDR=127\\.0\\.0\\.1 MASTER_PORT=" + master_port +
        " .*CXXRUN_STORE=127\\.0\\.0\\.1:" + std::to_string(port) + " ");
    EXPECT_TRUE(std::regex_search(r.out, line)) << "rank " << rank << ":\n" << r.out;
  }
}

TEST(MultiNode, ExplicitNodeRanksAndTheStoreAcrossNodes) {
  ncclrec::support::TempDir dir;
  const int port = freePort();
  // Node 1 starts first and waits for node 0's store to appear.
  auto b = start(agent(dir.path(), port, {"--node-rank", "1"}, {CXXRUN_TEST_WORKER, "share"}));
  std::this_thread::sleep_for(300ms);
  auto a = start(agent(dir.path(), port, {"--node_rank=0"}, {CXXRUN_TEST_WORKER, "share"}));
  const ProcessResult ra = a->wait(60s), rb = b->wait(60s);
  ASSERT_TRUE(ra.exitedWith(0)) << ra.describe();
  ASSERT_TRUE(rb.exitedWith(0)) << rb.describe();
  EXPECT_NE(ra.out.find("[rank1]:rank 1 got secret-of-mn"), std::string::npos) << ra.out;
  EXPECT_NE(rb.out.find("[rank2]:rank 2 got secret-of-mn"), std::string::npos) << rb.out;
  EXPECT_NE(rb.out.find("[rank3]:rank 3 got secret-of-mn"), std::string::npos) << rb.out;
}

TEST(MultiNode, AMissingNodeIsNamedAfterTheJoinTimeout) {
  ncclrec::support::TempDir dir;
  auto r = ncclrec::support::runProcess(
      agent(dir.path(), freePort(), {"--join-timeout", "1"}, {CXXRUN_TEST_WORKER, "env"}), 30s);
  EXPECT_TRUE(r.exitedWith(2)) << r.describe();
  EXPECT_NE(r.err.find("cxxrun: node(s) 1 did not join within 1 s (joined: 0 on "),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out, "");
}

TEST(MultiNode, AnotherJobOnThePortIsToldApart) {
  ncclrec::support::TempDir dir;
  const int port = freePort();
  auto a = start(agent(dir.path(), port, {"--node-rank", "0", "--join-timeout", "2"},
                       {CXXRUN_TEST_WORKER, "env"}));
  std::this_thread::sleep_for(300ms);
  SpawnOptions other = agent(dir.path(), port, {}, {CXXRUN_TEST_WORKER, "env"});
  other.argv[8] = "another-run";  // --run-id: another job, another token
  auto r = ncclrec::support::runProcess(other, 30s);
  EXPECT_TRUE(r.exitedWith(2)) << r.describe();
  EXPECT_NE(r.err.find("is in use by another job"), std::string::npos) << r.err;
  a->wait(30s);
}

TEST(MultiNode, AFailureOnOneNodeStopsTheOther) {
  ncclrec::support::TempDir dir;
  const int port = freePort();
  auto a = start(agent(dir.path(), port, {}, {CXXRUN_TEST_WORKER, "exit", "7", "3"}));
  std::this_thread::sleep_for(200ms);
  auto b = start(agent(dir.path(), port, {}, {CXXRUN_TEST_WORKER, "exit", "7", "3"}));
  const ProcessResult ra = a->wait(60s), rb = b->wait(60s);
  EXPECT_TRUE(ra.exitedWith(1)) << ra.describe();
  EXPECT_TRUE(rb.exitedWith(1)) << rb.describe();
  for (const ProcessResult* r : {&ra, &rb}) {
    EXPECT_NE(r->err.find("Root Cause (first observed failure):\n[0]:\n"), std::string::npos)
        << r->err;
    EXPECT_NE(r->err.find("  rank      : 3 (local_rank: 1)\n  exitcode  : 7"), std::string::npos)
        << r->err;
  }
}

// gated_save over two nodes with separate dump directories, as on two machines: node 0's rank 0
// times out after 2 s, node 1's ranks never would (600 s): they dump because node 0 told node 1's
// agent through the store.
TEST(MultiNode, AHangOnOneNodeMakesEveryNodeDumpAndReport) {
  ncclrec::support::TempDir dir;
  const int port = freePort();
  auto gated = [&](const std::string& node, const char* timeout) {
    SpawnOptions o = agent(dir.path() + "/" + node, port, {"--node-rank", node == "a" ? "0" : "1"},
                           {NCCLREC_SAMPLE_GATED_SAVE, "10", "5"});
    o.ld_preload = NCCLREC_SHIM;
    o.env["NCCLREC_TIMEOUT"] = timeout;
    o.env["NCCLREC_POLL_MS"] = "100";
    o.env["NCCLREC_SAMPLE_ID_FILE"] = dir.path() + "/unique.id";
    return o;
  };
  auto a = start(gated("a", "2"));
  auto b = start(gated("b", "600"));
  const ProcessResult ra = a->wait(90s), rb = b->wait(90s);
  EXPECT_TRUE(ra.exitedWith(3)) << ra.describe();
  EXPECT_TRUE(rb.exitedWith(3)) << rb.describe();
  EXPECT_NE(rb.err.find("another node hung: asking every rank to dump"), std::string::npos)
      << rb.err;
  auto text_a = ncclrec::support::readFile(dir.path() + "/a/mn/attempt_0/report.json");
  auto text_b = ncclrec::support::readFile(dir.path() + "/b/mn/attempt_0/report.node1.json");
  ASSERT_TRUE(text_a && text_b);
  const auto ja = nlohmann::json::parse(*text_a), jb = nlohmann::json::parse(*text_b);
  ASSERT_EQ(ja["ranks"].size(), 2u);
  ASSERT_EQ(jb["ranks"].size(), 2u);
  for (const auto& r : jb["ranks"]) {
    EXPECT_EQ(r["recording"]["dump_reason"], "trigger") << r.dump();
    EXPECT_EQ(r["last_op"]["op_seq"], 7) << r.dump();
  }
}

}  // namespace
