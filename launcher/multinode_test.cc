// Multi-node jobs from several cxxrun agents on one machine, meeting through the store on
// 127.0.0.1: rendezvous (fixed and elastic), node ranks, the shared secret, fail-fast, restarts
// across nodes, and one job-wide verdict on node 0 when the job hangs.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
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
namespace fs = std::filesystem;

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

constexpr const char* kSecret = "multinode-test-secret";

SpawnOptions agent(const std::string& dumps, int port, std::vector<std::string> flags,
                   std::vector<std::string> program, const std::string& nnodes = "2") {
  SpawnOptions o;
  o.argv = {CXXRUN_BIN,           "--nnodes", nnodes, "--nproc-per-node", "2", "--master-port",
            std::to_string(port), "--run-id", "mn"};
  o.argv.insert(o.argv.end(), flags.begin(), flags.end());
  o.argv.insert(o.argv.end(), program.begin(), program.end());
  o.env = {{"NCCLREC_DIR", dumps}, {"CXXRUN_TOKEN", kSecret}};
  o.unset_env = {"LD_PRELOAD", "CXXRUN_STORE", "RANK", "WORLD_SIZE", "SLURM_JOB_ID"};
  return o;
}

size_t count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + 1))
    ++n;
  return n;
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
  // Node 1 starts first and waits for node 0's store to appear. It reads the secret from a file,
  // node 0 from CXXRUN_TOKEN: the same secret either way.
  const std::string token_file = dir.path() + "/secret";
  std::ofstream(token_file) << kSecret << "\n";
  SpawnOptions node1 =
      agent(dir.path(), port, {"--node-rank", "1", "--rdzv-token-file", token_file},
            {CXXRUN_TEST_WORKER, "share"});
  node1.unset_env.push_back("CXXRUN_TOKEN");
  node1.env.erase("CXXRUN_TOKEN");
  auto b = start(node1);
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

TEST(MultiNode, SeveralNodesNeedASharedSecret) {
  ncclrec::support::TempDir dir;
  SpawnOptions o = agent(dir.path(), freePort(), {}, {CXXRUN_TEST_WORKER, "env"});
  o.env.erase("CXXRUN_TOKEN");
  o.unset_env.push_back("CXXRUN_TOKEN");
  auto r = ncclrec::support::runProcess(o, 30s);
  EXPECT_TRUE(r.exitedWith(2)) << r.describe();
  EXPECT_NE(r.err.find("cxxrun: a job on several nodes needs a shared secret for its store: set "
                       "CXXRUN_TOKEN"),
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

TEST(MultiNode, AgentsThatDisagreeOnTheJobsShapeAreRefused) {
  ncclrec::support::TempDir dir;
  const int port = freePort();
  auto a = start(agent(dir.path(), port, {"--join-timeout", "2"}, {CXXRUN_TEST_WORKER, "env"}));
  std::this_thread::sleep_for(300ms);
  SpawnOptions more_workers = agent(dir.path(), port, {}, {CXXRUN_TEST_WORKER, "env"});
  more_workers.argv[4] = "3";  // --nproc-per-node
  auto r = ncclrec::support::runProcess(more_workers, 30s);
  EXPECT_TRUE(r.exitedWith(2)) << r.describe();
  EXPECT_NE(r.err.find("cxxrun: --nproc-per-node 3 here, but the job's other agents use 2: every "
                       "node must be started with the same value"),
            std::string::npos)
      << r.err;
  r = ncclrec::support::runProcess(agent(dir.path(), port, {}, {CXXRUN_TEST_WORKER, "env"}, "1:2"),
                                   30s);
  EXPECT_TRUE(r.exitedWith(2)) << r.describe();
  EXPECT_NE(r.err.find("cxxrun: --nnodes 1:2 here, but the job's other agents use 2:2"),
            std::string::npos)
      << r.err;
  r = ncclrec::support::runProcess(
      agent(dir.path(), port, {"--max-restarts", "1"}, {CXXRUN_TEST_WORKER, "env"}), 30s);
  EXPECT_TRUE(r.exitedWith(2)) << r.describe();
  EXPECT_NE(r.err.find("cxxrun: --max-restarts 1 here, but the job's other agents use 0"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(a->wait(30s).exitedWith(2));  // nobody valid joined
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

TEST(MultiNode, ARestartInvolvesEveryNode) {
  ncclrec::support::TempDir dir;
  const int port = freePort();
  // Rank 2 (node 1, local rank 0) fails in attempt 0 while the others wait as in a collective:
  // both nodes stop their workers and start attempt 1 together, with fresh dump directories.
  auto node = [&](const std::string& name) {
    return agent(dir.path() + "/" + name, port, {"--max-restarts", "1"},
                 {CXXRUN_TEST_WORKER, "flaky_on", "2"});
  };
  auto a = start(node("a"));
  std::this_thread::sleep_for(200ms);
  auto b = start(node("b"));
  const ProcessResult ra = a->wait(60s), rb = b->wait(60s);
  ASSERT_TRUE(ra.exitedWith(0)) << ra.describe();
  ASSERT_TRUE(rb.exitedWith(0)) << rb.describe();
  EXPECT_NE(rb.out.find("[rank2]:rank 2 attempt 0 fails"), std::string::npos) << rb.out;
  for (int rank = 0; rank < 4; ++rank) {
    const ProcessResult& r = rank < 2 ? ra : rb;
    const std::string attempt_dir = dir.path() + "/" + (rank < 2 ? "a" : "b") + "/mn/attempt_1";
    EXPECT_NE(r.out.find("[rank" + std::to_string(rank) + "]:rank " + std::to_string(rank) +
                         " attempt 1 succeeds in " + attempt_dir + "\n"),
              std::string::npos)
        << r.out;
  }
  const std::regex restarting(
      "cxxrun: worker group failed \\(run mn, attempt 0; first failure: rank 2 on [^,]+, exit code "
      "1\\); restarting, 1 restart\\(s\\) left");
  EXPECT_TRUE(std::regex_search(ra.err, restarting)) << ra.err;
  EXPECT_TRUE(std::regex_search(rb.err, restarting)) << rb.err;
  for (const char* node : {"a", "b"}) {
    EXPECT_TRUE(fs::is_directory(dir.path() + "/" + node + "/mn/attempt_0")) << node;
    EXPECT_TRUE(fs::is_directory(dir.path() + "/" + node + "/mn/attempt_1")) << node;
  }
}

TEST(MultiNode, WhenRestartsRunOutEveryNodeNamesTheLastAttemptsFirstFailure) {
  ncclrec::support::TempDir dir;
  const int port = freePort();
  auto node = [&]() {
    return agent(dir.path(), port, {"--max-restarts", "1"}, {CXXRUN_TEST_WORKER, "exit", "7", "3"});
  };
  auto a = start(node());
  std::this_thread::sleep_for(200ms);
  auto b = start(node());
  const ProcessResult ra = a->wait(60s), rb = b->wait(60s);
  EXPECT_TRUE(ra.exitedWith(1)) << ra.describe();
  EXPECT_TRUE(rb.exitedWith(1)) << rb.describe();
  EXPECT_EQ(count(rb.out, "[rank3]:rank 3 exits with 7"), 2u) << rb.out;
  for (const ProcessResult* r : {&ra, &rb}) {
    EXPECT_NE(r->err.find("cxxrun: worker group failed (run mn, attempt 1)\n"), std::string::npos)
        << r->err;
    EXPECT_NE(r->err.find("Root Cause (first observed failure):\n[0]:\n"), std::string::npos)
        << r->err;
    EXPECT_NE(r->err.find("  rank      : 3 (local_rank: 1)\n  exitcode  : 7"), std::string::npos)
        << r->err;
  }
}

// torchrun's elastic rendezvous: 1:3 with two agents closes once no third came for the last
// call, and the job runs on the two nodes that joined.
TEST(MultiNode, ElasticRendezvousClosesAfterTheLastCall) {
  ncclrec::support::TempDir dir;
  const int port = freePort();
  auto node = [&]() {
    return agent(dir.path(), port, {"--rdzv-last-call", "1"}, {CXXRUN_TEST_WORKER, "env"}, "1:3");
  };
  const auto t0 = std::chrono::steady_clock::now();
  auto a = start(node());
  std::this_thread::sleep_for(200ms);
  auto b = start(node());
  const ProcessResult ra = a->wait(60s), rb = b->wait(60s);
  ASSERT_TRUE(ra.exitedWith(0)) << ra.describe();
  ASSERT_TRUE(rb.exitedWith(0)) << rb.describe();
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 1s);  // the last call was waited out
  EXPECT_NE(ra.err.find("cxxrun: closing the rendezvous with 2 node(s): no other agent joined "
                        "within 1 s (--rdzv-last-call)"),
            std::string::npos)
      << ra.err;
  EXPECT_NE(rb.err.find("cxxrun: node rank 1 of 2 (elastic --nnodes 1:3): WORLD_SIZE 4"),
            std::string::npos)
      << rb.err;
  for (int rank = 0; rank < 4; ++rank) {
    const ProcessResult& r = rank < 2 ? ra : rb;
    const std::string rk = std::to_string(rank);
    EXPECT_TRUE(std::regex_search(
        r.out,
        std::regex("\\[rank" + rk + "\\]:RANK=" + rk + " LOCAL_RANK=" + std::to_string(rank % 2) +
                   " WORLD_SIZE=4 LOCAL_WORLD_SIZE=2 GROUP_RANK=" + std::to_string(rank / 2) +
                   " GROUP_WORLD_SIZE=2 ")))
        << r.out;
  }
}

TEST(MultiNode, ALateAgentIsToldTheRoundIsClosed) {
  ncclrec::support::TempDir dir;
  const int port = freePort();
  // 1:2 closes as soon as the second agent joins; the workers stay a while.
  auto node = [&]() {
    return agent(dir.path(), port, {}, {CXXRUN_TEST_WORKER, "linger", "2"}, "1:2");
  };
  auto a = start(node());
  std::this_thread::sleep_for(200ms);
  auto b = start(node());
  ASSERT_TRUE(a->waitForStdout("[rank0]:RANK=0", 30s)) << a->stderrSoFar();
  auto late = ncclrec::support::runProcess(node(), 30s);
  EXPECT_TRUE(late.exitedWith(2)) << late.describe();
  EXPECT_NE(late.err.find("cxxrun: the rendezvous of run mn is closed (2 node(s) joined, --nnodes "
                          "1:2): this agent came too late and is not part of the job"),
            std::string::npos)
      << late.err;
  EXPECT_EQ(late.out, "");
  const ProcessResult ra = a->wait(60s), rb = b->wait(60s);
  EXPECT_TRUE(ra.exitedWith(0)) << ra.describe();
  EXPECT_TRUE(rb.exitedWith(0)) << rb.describe();
  EXPECT_NE(rb.out.find("[rank3]:RANK=3 LOCAL_RANK=1 WORLD_SIZE=4 "), std::string::npos) << rb.out;
}

// MIN 1: after the last call the job runs on the one node that came, as a single-node job.
TEST(MultiNode, ElasticWithOneAgentRunsAloneAfterTheLastCall) {
  ncclrec::support::TempDir dir;
  auto r = ncclrec::support::runProcess(agent(dir.path(), freePort(), {"--rdzv-last-call", "0.5"},
                                              {CXXRUN_TEST_WORKER, "share"}, "1:2"),
                                        30s);
  ASSERT_TRUE(r.exitedWith(0)) << r.describe();
  EXPECT_NE(r.err.find("cxxrun: node rank 0 of 1 (elastic --nnodes 1:2): WORLD_SIZE 2"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("[rank1]:rank 1 got secret-of-mn"), std::string::npos) << r.out;
}

TEST(MultiNode, ElasticFailsNamingTheNodesThatJoinedWhenTooFewCame) {
  ncclrec::support::TempDir dir;
  auto r = ncclrec::support::runProcess(
      agent(dir.path(), freePort(), {"--join-timeout", "1"}, {CXXRUN_TEST_WORKER, "env"}, "2:3"),
      30s);
  EXPECT_TRUE(r.exitedWith(2)) << r.describe();
  EXPECT_NE(r.err.find("cxxrun: only 1 of at least 2 node(s) joined within 1 s (--nnodes 2:3; "
                       "joined: 0 on "),
            std::string::npos)
      << r.err;
}

// The scenario job over two nodes with separate dump directories, as on two machines; rank 3
// (node 1) issues an all-reduce the others do not. Node 0's ranks time out after 2 s, node 1's
// never would (600 s): they dump because node 0 told node 1's agent through the store, and node
// 1's agent sends their dumps to node 0, whose one verdict names rank 3.
SpawnOptions gatedOnRank3(const ncclrec::support::TempDir& dir, int port, const std::string& node,
                          const char* timeout) {
  SpawnOptions o = agent(dir.path() + "/" + node, port, {"--node-rank", node == "a" ? "0" : "1"},
                         {NCCLREC_SCENARIO, "gated", "4", "2", "3"});
  o.ld_preload = NCCLREC_SHIM;
  o.env["NCCLREC_TIMEOUT"] = timeout;
  o.env["NCCLREC_POLL_MS"] = "100";
  o.env["NCCLREC_DUMP_WAIT"] = "10";
  o.env["NCCLREC_SAMPLE_ID_FILE"] = dir.path() + "/unique.id";
  return o;
}

TEST(MultiNode, AHangGetsOneVerdictOnNodeZeroOverEveryNodesRanks) {
  ncclrec::support::TempDir dir;
  const int port = freePort();
  auto a = start(gatedOnRank3(dir, port, "a", "2"));
  auto b = start(gatedOnRank3(dir, port, "b", "600"));
  const ProcessResult ra = a->wait(90s), rb = b->wait(90s);
  EXPECT_TRUE(ra.exitedWith(3)) << ra.describe();
  EXPECT_TRUE(rb.exitedWith(3)) << rb.describe();
  // Node 1's agent sees the mismatch among its own ranks live, or hears of node 0's hang first.
  EXPECT_TRUE(rb.err.find("another node hung: asking every rank to dump") != std::string::npos ||
              rb.err.find("cxxrun: hang detected;") != std::string::npos)
      << rb.err;
  const std::string report = dir.path() + "/a/mn/attempt_0/report.json";
  EXPECT_TRUE(std::regex_search(
      rb.err, std::regex("cxxrun: sent 2 recording\\(s\\) \\([0-9]+ bytes\\) of node 1 to node 0 "
                         "\\(host [^)]+\\), which prints the job's verdict\n")))
      << rb.err;
  EXPECT_NE(rb.err.find("cxxrun: the job's verdict is on node 0 (host "), std::string::npos)
      << rb.err;
  EXPECT_NE(rb.err.find("): " + report + "\n"), std::string::npos) << rb.err;
  // One verdict, on node 0 only, naming a rank that node 0 does not run.
  EXPECT_EQ(count(ra.err, "rank_gated_collective: rank 3 alone"), 1u) << ra.err;
  EXPECT_EQ(rb.err.find("rank_gated_collective"), std::string::npos) << rb.err;
  EXPECT_FALSE(fs::exists(dir.path() + "/b/mn/attempt_0/report.node1.json"));
  auto text = ncclrec::support::readFile(report);
  ASSERT_TRUE(text);
  const auto j = nlohmann::json::parse(*text);
  ASSERT_TRUE(j["verdict"].is_object()) << j.dump(2);
  EXPECT_EQ(j["verdict"]["class"], "rank_gated_collective");
  EXPECT_EQ(j["verdict"]["ranks"], nlohmann::json::array({3}));
  ASSERT_EQ(j["ranks"].size(), 4u) << j.dump(2);
  for (int rank = 0; rank < 4; ++rank) {
    const auto& r = j["ranks"][static_cast<size_t>(rank)];
    SCOPED_TRACE(r.dump());
    EXPECT_EQ(r["rank"], rank);
    EXPECT_EQ(r["node"], rank / 2);
    ASSERT_TRUE(r["recording"].is_object());
    EXPECT_EQ(r["recording"]["kind"], "dump");
    if (rank >= 2) {
      EXPECT_EQ(r["recording"]["dump_reason"], "trigger");
      EXPECT_EQ(r["recording"]["source"].get<std::string>().rfind(
                    dir.path() + "/a/mn/attempt_0/node1/", 0),
                0u);
    }
  }
  ASSERT_EQ(j["nodes"].size(), 2u);
  EXPECT_EQ(j["nodes"][1]["data"], true);
  EXPECT_EQ(j["nodes"][1]["files"], 2);
}

// Node 1's detector declares the hang (node 0's is off, its ranks' watchdogs far away): node 0's
// job-wide report has node 1's timeline, saying which node detected it.
TEST(MultiNode, AHangDetectedOnAnotherNodeKeepsItsTimelineInNodeZerosReport) {
  ncclrec::support::TempDir dir;
  const int port = freePort();
  SpawnOptions oa = gatedOnRank3(dir, port, "a", "600");
  oa.env["NCCLREC_WATCHER"] = "off";
  auto a = start(oa);
  auto b = start(gatedOnRank3(dir, port, "b", "600"));
  const ProcessResult ra = a->wait(90s), rb = b->wait(90s);
  EXPECT_TRUE(ra.exitedWith(3)) << ra.describe();
  EXPECT_TRUE(rb.exitedWith(3)) << rb.describe();
  EXPECT_NE(rb.err.find("cxxrun: hang detected;"), std::string::npos) << rb.err;
  EXPECT_TRUE(std::regex_search(
      ra.err, std::regex("cxxrun: timeline: the stall began at [0-9:.]+ \\(the last NCCL call or "
                         "completion of any rank\\); detected after [0-9.]+ s on node 1 \\(host "
                         "[^)]+\\); verdict after [0-9.]+ s\n")))
      << ra.err;
  auto text = ncclrec::support::readFile(dir.path() + "/a/mn/attempt_0/report.json");
  ASSERT_TRUE(text);
  const auto j = nlohmann::json::parse(*text);
  ASSERT_TRUE(j["timeline"].is_object()) << j.dump(2);
  EXPECT_EQ(j["timeline"]["detected_by"].get<std::string>().rfind("node 1 (host ", 0), 0u);
  EXPECT_GT(j["timeline"]["stall_began_ns"].get<int64_t>(), 0);
  EXPECT_LT(j["timeline"]["detected_after_s"].get<double>(), 15);
  EXPECT_EQ(j["timeline"]["detection"].get<std::string>().rfind("hang (", 0), 0u);
  EXPECT_EQ(j["verdict"]["class"], "rank_gated_collective");
}

// A node whose agent cannot answer (stopped here with SIGSTOP) is named in the report, and holds it
// up for no longer than its heartbeat's silence (3 s), however long NCCLREC_DUMP_WAIT (+5 s) is.
TEST(MultiNode, ANodeThatSendsNothingIsNamedInTheReport) {
  ncclrec::support::TempDir dir;
  const int port = freePort();
  SpawnOptions oa = gatedOnRank3(dir, port, "a", "2");
  SpawnOptions ob = gatedOnRank3(dir, port, "b", "600");
  oa.env["NCCLREC_DUMP_WAIT"] = ob.env["NCCLREC_DUMP_WAIT"] = "30";
  auto a = start(oa);
  auto b = start(ob);
  // Stop node 1's agent once its ranks are recording (their workers go on), before node 0's
  // ranks time out.
  const std::string b_dir = dir.path() + "/b/mn/attempt_0";
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  auto black_boxes = [&] {
    int n = 0;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(b_dir, ec)) n += e.path().extension() == ".bbox";
    return n;
  };
  while (black_boxes() < 2 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(20ms);
  ASSERT_EQ(black_boxes(), 2) << b->stderrSoFar();
  ASSERT_TRUE(b->signal(SIGSTOP));
  const auto t0 = std::chrono::steady_clock::now();
  const ProcessResult ra = a->wait(90s);
  const auto took = std::chrono::steady_clock::now() - t0;
  b->signal(SIGKILL);
  b->wait(30s);
  EXPECT_TRUE(ra.exitedWith(3)) << ra.describe();
  EXPECT_LT(took, 20s);  // NCCLREC_DUMP_WAIT + 5 s would be 35 s
  EXPECT_TRUE(
      std::regex_search(ra.err, std::regex("cxxrun: warning: node 1 \\(host [^)]+\\): not heard "
                                           "from for [0-9.]+ s \\(its agent stopped "
                                           "counting at alive/1 in the job's store")))
      << ra.err;
  EXPECT_NE(ra.err.find("cxxrun: warning: no data from node 1 (host "), std::string::npos)
      << ra.err;
  auto text = ncclrec::support::readFile(dir.path() + "/a/mn/attempt_0/report.json");
  ASSERT_TRUE(text);
  const auto j = nlohmann::json::parse(*text);
  ASSERT_EQ(j["ranks"].size(), 4u) << j.dump(2);
  EXPECT_EQ(j["ranks"][3]["note"].get<std::string>().rfind("no data from node 1 (host ", 0), 0u);
  EXPECT_EQ(j["nodes"][1]["data"], false);
}

// Two nodes with a dump directory each, and inside the all-reduce #3 every rank entered the
// messages from rank 1 (node 0) to rank 2 (node 1) stop arriving (HOSTNCCL_DROP_LINK); every
// process runs, default settings. Node 0's ranks wait for ranks its directory does not show: it
// reads node 1's through node 1's agent once that wait lasts a second, and names the connection
// within seconds (before, the wait was judged at NCCLREC_TIMEOUT, 60 s).
TEST(MultiNode, NodeZeroReadsTheOtherNodesRanksWhenItsOwnWaitForThem) {
  ncclrec::support::TempDir dir;
  const int port = freePort();
  auto node = [&](const std::string& name, const char* rank) {
    SpawnOptions o = agent(dir.path() + "/" + name, port, {"--node-rank", rank},
                           {NCCLREC_SCENARIO, "no_hang", "100000000"});
    o.ld_preload = NCCLREC_SHIM;
    o.env["NCCLREC_COMPLETION"] = "profiler";
    o.env["HOSTNCCL_DROP_LINK"] = "1>2@3";
    o.env["NCCLREC_SAMPLE_ID_FILE"] = dir.path() + "/unique.id";
    o.unset_env.push_back("NCCLREC_TIMEOUT");
    return o;
  };
  const auto t0 = std::chrono::steady_clock::now();
  auto a = start(node("a", "0"));
  auto b = start(node("b", "1"));
  const ProcessResult ra = a->wait(90s), rb = b->wait(90s);
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_TRUE(ra.exitedWith(3)) << ra.describe();
  EXPECT_TRUE(rb.exitedWith(3)) << rb.describe();
  EXPECT_LT(took, 30s);
  EXPECT_NE(ra.err.find("cxxrun: ranks here wait for ranks this node's dump directory does not "
                        "show; reading 1 other node(s) through their agents"),
            std::string::npos)
      << ra.err;
  EXPECT_NE(ra.err.find("transport_stalled: data stopped moving between rank 1 (host "),
            std::string::npos)
      << ra.err;
  auto text = ncclrec::support::readFile(dir.path() + "/a/mn/attempt_0/report.json");
  ASSERT_TRUE(text);
  const auto j = nlohmann::json::parse(*text);
  ASSERT_TRUE(j["verdict"].is_object()) << j.dump(2);
  EXPECT_EQ(j["verdict"]["class"], "transport_stalled");
  EXPECT_EQ(j["verdict"]["ranks"], nlohmann::json::array({1, 2}));
  ASSERT_TRUE(j["timeline"].is_object()) << j.dump(2);
  EXPECT_LT(j["timeline"]["verdict_after_s"].get<double>(), 15) << j.dump(2);
  // Node 1's detector reads only its own ranks: it never widens.
  EXPECT_EQ(rb.err.find("reading 1 other node(s)"), std::string::npos) << rb.err;
}

}  // namespace
