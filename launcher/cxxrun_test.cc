// The cxxrun binary end to end: real worker processes, real signals, hostnccl and the shim.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/process.h"

namespace {

using namespace std::chrono_literals;
using ncclrec::support::ProcessResult;
using ncclrec::support::SpawnOptions;
namespace fs = std::filesystem;

SpawnOptions cxxrun(const std::string& dumps, std::vector<std::string> args) {
  SpawnOptions o;
  o.argv = {CXXRUN_BIN};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.env = {{"NCCLREC_DIR", dumps}};
  o.unset_env = {"LD_PRELOAD", "CXXRUN_STORE", "RANK", "WORLD_SIZE"};
  return o;
}

ProcessResult run(const std::string& dumps, std::vector<std::string> args) {
  return ncclrec::support::runProcess(cxxrun(dumps, std::move(args)), 60s);
}

size_t count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + 1))
    ++n;
  return n;
}

nlohmann::json readJson(const std::string& path) {
  auto text = ncclrec::support::readFile(path);
  if (!text) return nullptr;
  return nlohmann::json::parse(*text, nullptr, false);
}

class EnvContract : public ::testing::TestWithParam<int> {};

TEST_P(EnvContract, EveryRankGetsTorchrunsEnvironment) {
  const int n = GetParam();
  ncclrec::support::TempDir dir;
  const std::string run_id = "env" + std::to_string(n);
  auto r = run(dir.path(), {"--master-port", "0", "--nproc-per-node", std::to_string(n), "--run-id",
                            run_id, CXXRUN_TEST_WORKER, "env"});
  ASSERT_TRUE(r.exitedWith(0)) << r.describe();
  EXPECT_NE(r.err.find("cxxrun: NCCL: hostnccl from "), std::string::npos) << r.err;
  EXPECT_EQ(count(r.err, "cxxrun: NCCL:"), 1u);
  const std::string attempt_dir = dir.path() + "/" + run_id + "/attempt_0";
  for (int rank = 0; rank < n; ++rank) {
    const std::string rk = std::to_string(rank), w = std::to_string(n);
    const std::regex line(
        "\\[rank" + rk + "\\]:RANK=" + rk + " LOCAL_RANK=" + rk + " WORLD_SIZE=" + w +
        " LOCAL_WORLD_SIZE=" + w + " GROUP_RANK=0 GROUP_WORLD_SIZE=1 ROLE_RANK=" + rk +
        " ROLE_WORLD_SIZE=" + w +
        " MASTER_ADDR=127\\.0\\.0\\.1 MASTER_PORT=[1-9][0-9]* "
        "TORCHELASTIC_RESTART_COUNT=0 TORCHELASTIC_MAX_RESTARTS=0 "
        "TORCHELASTIC_RUN_ID=" +
        run_id +
        " CXXRUN_STORE=127\\.0\\.0\\.1:[1-9][0-9]* "
        "NCCLREC_DIR=" +
        attempt_dir + " NCCLREC_RUN_ID=" + run_id + " LD_LIBRARY_PATH=[^ ]*/hostnccl(:.*)?\n");
    EXPECT_TRUE(std::regex_search(r.out, line)) << "rank " << rank << ":\n" << r.out;
    EXPECT_NE(r.err.find("[rank" + rk + "]:rank " + rk + " to stderr\n"), std::string::npos)
        << r.err;
  }
  EXPECT_EQ(count(r.out, "\n"), static_cast<size_t>(n));
  EXPECT_TRUE(fs::is_directory(attempt_dir));
}

INSTANTIATE_TEST_SUITE_P(Workers, EnvContract, ::testing::Values(1, 2, 4));

TEST(Cxxrun, BusyMasterPortIsExitCode2WithAHint) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  const std::string port = std::to_string(ntohs(a.sin_port));
  ncclrec::support::TempDir dir;
  auto r = run(dir.path(), {"--master-port", port, CXXRUN_TEST_WORKER, "env"});
  close(fd);
  EXPECT_TRUE(r.exitedWith(2)) << r.describe();
  EXPECT_NE(r.err.find("cxxrun: port " + port +
                       " is in use (another job?): use --master-port 0 or another port\n"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out, "");
}

TEST(Cxxrun, BadFlagIsOneLineAndExitCode2) {
  ncclrec::support::TempDir dir;
  auto r = run(dir.path(), {"--nproc-per-node", "zero", CXXRUN_TEST_WORKER});
  EXPECT_TRUE(r.exitedWith(2)) << r.describe();
  EXPECT_EQ(r.err, "cxxrun: --nproc-per-node must be a positive number or auto, not 'zero'\n");
}

TEST(Cxxrun, FailFastOnAnExitCodeStopsTheOthersAndNamesTheFirstFailure) {
  ncclrec::support::TempDir dir;
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run(dir.path(),
               {"--standalone", "--nproc-per-node", "3", CXXRUN_TEST_WORKER, "exit", "7", "1"});
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 4s);  // SIGTERM, not the 5 s grace period
  EXPECT_TRUE(r.exitedWith(1)) << r.describe();
  EXPECT_NE(r.out.find("[rank1]:rank 1 exits with 7"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("Root Cause (first observed failure):\n[0]:\n"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("  rank      : 1 (local_rank: 1)\n  exitcode  : 7 (pid: "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("<NO_OTHER_FAILURES>"), std::string::npos)
      << r.err;  // SIGTERMed ranks are not failures
}

TEST(Cxxrun, FailFastOnASignal) {
  ncclrec::support::TempDir dir;
  auto r = run(dir.path(),
               {"--standalone", "--nproc-per-node", "3", CXXRUN_TEST_WORKER, "signal", "9", "2"});
  EXPECT_TRUE(r.exitedWith(1)) << r.describe();
  EXPECT_NE(r.err.find("  rank      : 2 (local_rank: 2)\n  exitcode  : -9 (pid: "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("Signal 9 (SIGKILL) received by PID"), std::string::npos) << r.err;
}

TEST(Cxxrun, GracePeriodEndsInSigkill) {
  ncclrec::support::TempDir dir;
  // A worker that ignores SIGTERM: a shell trapping it, waiting on a sleep.
  SpawnOptions o =
      cxxrun(dir.path(),
             {"--standalone", "--nproc-per-node", "2", "--grace-period", "0.5", "/bin/sh", "-c",
              "trap '' TERM; if [ $RANK = 0 ]; then sleep 0.3; exit 5; fi; "
              "while :; do sleep 0.1; done"});
  const auto t0 = std::chrono::steady_clock::now();
  auto r = ncclrec::support::runProcess(o, 30s);
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(took, 800ms);  // 0.3 s before the failure, then the whole grace period
  EXPECT_LT(took, 10s);
  EXPECT_TRUE(r.exitedWith(1)) << r.describe();
  EXPECT_NE(r.err.find("exitcode  : 5"), std::string::npos) << r.err;
}

TEST(Cxxrun, RestartsTheGroupWithAFreshAttemptDirectory) {
  ncclrec::support::TempDir dir;
  auto r = run(dir.path(), {"--standalone", "--nproc-per-node", "2", "--max-restarts", "2",
                            "--run-id", "flaky", CXXRUN_TEST_WORKER, "flaky"});
  EXPECT_TRUE(r.exitedWith(0)) << r.describe();
  EXPECT_NE(r.out.find("[rank0]:rank 0 attempt 0 fails"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[rank0]:rank 0 attempt 1 succeeds"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[rank1]:rank 1 attempt 1 succeeds"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("restarting, 2 restart(s) left"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::is_directory(dir.path() + "/flaky/attempt_0"));
  EXPECT_TRUE(fs::is_directory(dir.path() + "/flaky/attempt_1"));
  EXPECT_FALSE(fs::exists(dir.path() + "/flaky/attempt_2"));
}

TEST(Cxxrun, RestartsRunOut) {
  ncclrec::support::TempDir dir;
  auto r = run(dir.path(),
               {"--standalone", "--max-restarts", "1", CXXRUN_TEST_WORKER, "exit", "3", "0"});
  EXPECT_TRUE(r.exitedWith(1)) << r.describe();
  EXPECT_EQ(count(r.out, "[rank0]:rank 0 exits with 3"), 2u) << r.out;
  EXPECT_NE(r.err.find("attempt 1)"), std::string::npos) << r.err;
}

TEST(Cxxrun, LogDirWithRedirectsKeepsTheConsoleQuiet) {
  ncclrec::support::TempDir dir;
  auto r = run(dir.path(),
               {"--standalone", "--nproc-per-node", "2", "--run-id", "logs", "--log-dir",
                dir.path() + "/logs", "--redirects", "1", "--tee", "2", CXXRUN_TEST_WORKER, "env"});
  ASSERT_TRUE(r.exitedWith(0)) << r.describe();
  EXPECT_EQ(r.out.find("[rank"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("[rank1]:rank 1 to stderr"), std::string::npos) << r.err;
  for (int rank = 0; rank < 2; ++rank) {
    const std::string base = dir.path() + "/logs/logs/attempt_0/" + std::to_string(rank);
    auto out = ncclrec::support::readFile(base + "/stdout.log");
    auto err = ncclrec::support::readFile(base + "/stderr.log");
    ASSERT_TRUE(out && err) << base;
    EXPECT_EQ(out->rfind("[rank" + std::to_string(rank) + "]:RANK=" + std::to_string(rank), 0), 0u)
        << *out;
    EXPECT_EQ(*err,
              "[rank" + std::to_string(rank) + "]:rank " + std::to_string(rank) + " to stderr\n");
  }
}

TEST(Cxxrun, WorkersShareBytesThroughTheStore) {
  ncclrec::support::TempDir dir;
  auto r = run(dir.path(), {"--standalone", "--nproc-per-node", "4", "--run-id", "share",
                            CXXRUN_TEST_WORKER, "share"});
  ASSERT_TRUE(r.exitedWith(0)) << r.describe();
  for (int rank = 0; rank < 4; ++rank)
    EXPECT_NE(r.out.find("[rank" + std::to_string(rank) + "]:rank " + std::to_string(rank) +
                         " got secret-of-share\n"),
              std::string::npos)
        << r.out;
}

TEST(Cxxrun, ProgramThatCannotRunIsAFailure) {
  ncclrec::support::TempDir dir;
  auto r = run(dir.path(), {"--standalone", "/no/such/program"});
  EXPECT_TRUE(r.exitedWith(1)) << r.describe();
  EXPECT_NE(r.err.find("[rank0]:cxxrun: cannot run /no/such/program: No such file"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("exitcode  : 127"), std::string::npos) << r.err;
}

// LD_PRELOAD=libncclrec.so around cxxrun reaches cxxrun itself and every worker; neither calls
// NCCL here, so the shim must not create a single file.
TEST(Cxxrun, ThePreloadedShimLeavesCxxrunAlone) {
  ncclrec::support::TempDir dir;
  SpawnOptions o = cxxrun(dir.path() + "/dumps", {"--standalone", "--nproc-per-node", "2",
                                                  "--run-id", "shim", CXXRUN_TEST_WORKER, "env"});
  o.ld_preload = NCCLREC_SHIM;
  o.cwd = dir.path();
  std::string error;
  auto p = ncclrec::support::Process::start(o, &error);
  ASSERT_NE(p, nullptr) << error;
  const pid_t pid = p->pid();
  auto r = p->wait(60s);
  ASSERT_TRUE(r.exitedWith(0)) << r.describe();
  EXPECT_EQ(count(r.out, "[rank"), 2u) << r.out;
  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir.path()))
    if (!e.is_directory()) files.push_back(e.path().string());
  EXPECT_TRUE(files.empty()) << ::testing::PrintToString(files) << " (cxxrun pid " << pid << ")";
  EXPECT_FALSE(fs::exists(dir.path() + "/ncclrec-dumps"));
  EXPECT_TRUE(fs::is_directory(dir.path() + "/dumps/shim/attempt_0"));
}

TEST(Cxxrun, SigtermOnAJobWithoutRecordingsStopsAtOnce) {
  ncclrec::support::TempDir dir;
  std::string error;
  auto p = ncclrec::support::Process::start(
      cxxrun(dir.path(), {"--standalone", "--nproc-per-node", "2", "--run-id", "plain",
                          CXXRUN_TEST_WORKER, "sleep"}),
      &error);
  ASSERT_NE(p, nullptr) << error;
  ASSERT_TRUE(p->waitForStdout("[rank1]:rank 1 ready", 30s)) << p->stdoutSoFar();
  const auto t0 = std::chrono::steady_clock::now();
  p->signal(SIGTERM);
  auto r = p->wait(30s);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);  // nothing to wait for: no black box
  EXPECT_TRUE(r.exitedWith(143)) << r.describe();
  const auto report = readJson(dir.path() + "/plain/attempt_0/report.json");
  ASSERT_TRUE(report.is_object());
  EXPECT_EQ(report["reason"], "interrupt");
  ASSERT_EQ(report["ranks"].size(), 2u);
  EXPECT_TRUE(report["ranks"][0]["recording"].is_null());
  EXPECT_TRUE(report["verdict"].is_null());
}

SpawnOptions gatedSave(const std::string& dir, std::vector<std::string> flags,
                       const char* timeout) {
  flags.insert(flags.begin(), {"--standalone", "--nproc-per-node", "4", "--run-id", "gated"});
  flags.insert(flags.end(), {NCCLREC_SAMPLE_GATED_SAVE, "10", "5"});
  SpawnOptions o = cxxrun(dir + "/dumps", flags);
  o.ld_preload = NCCLREC_SHIM;
  o.env["NCCLREC_TIMEOUT"] = timeout;
  o.env["NCCLREC_POLL_MS"] = "100";
  o.env["NCCLREC_DUMP_WAIT"] = "20";
  o.env["NCCLREC_SAMPLE_ID_FILE"] = dir + "/unique.id";
  return o;
}

// `dump_reasons`: the reasons each rank's dump may carry.
void expectFourRanksStuckInGatedSave(const nlohmann::json& report, const std::string& reason,
                                     const std::vector<std::string>& dump_reasons) {
  ASSERT_TRUE(report.is_object());
  EXPECT_EQ(report["reason"], reason);
  EXPECT_EQ(report["run_id"], "gated");
  ASSERT_EQ(report["ranks"].size(), 4u) << report.dump(2);
  for (const auto& r : report["ranks"]) {
    SCOPED_TRACE(r.dump());
    ASSERT_TRUE(r["recording"].is_object());
    EXPECT_EQ(r["recording"]["kind"], "dump");
    const std::string dump_reason = r["recording"]["dump_reason"];
    EXPECT_NE(std::find(dump_reasons.begin(), dump_reasons.end(), dump_reason), dump_reasons.end())
        << dump_reason;
    EXPECT_EQ(r["last_op"]["op"], "ncclAllReduce");
    EXPECT_EQ(r["last_op"]["state"], "enqueued");
    EXPECT_EQ(r["last_op"]["op_seq"], 7);
    const std::string site = r["last_op"]["call_site"];
    EXPECT_NE(site.find(r["rank"] == 0 ? "saveCheckpoint" : "trainStep"), std::string::npos)
        << site;
  }
}

// The scenario job (tests/scenarios/scenario.cc) under the shim on 4 ranks; `mode` hits rank 3
// at step 2.
SpawnOptions scenario(const std::string& dir, const std::string& run_id, const std::string& mode,
                      const char* dump_wait = "20") {
  SpawnOptions o = cxxrun(dir + "/dumps", {"--standalone", "--nproc-per-node", "4", "--run-id",
                                           run_id, NCCLREC_SCENARIO, mode, "4", "2", "3"});
  o.ld_preload = NCCLREC_SHIM;
  o.env["NCCLREC_POLL_MS"] = "100";
  o.env["NCCLREC_DUMP_WAIT"] = dump_wait;
  o.env["NCCLREC_SAMPLE_ID_FILE"] = dir + "/unique.id";
  return o;
}

// A failure stays exit code 1, but under the shim the summary is followed by the verdict.
void expectFailureVerdict(const ProcessResult& r, const std::string& report_path,
                          const std::string& cls) {
  EXPECT_TRUE(r.exitedWith(1)) << r.describe();
  const size_t summary = r.err.find("Root Cause (first observed failure):");
  const size_t verdict = r.err.find("cxxrun: verdict after the worker failure (run ");
  ASSERT_NE(summary, std::string::npos) << r.err;
  ASSERT_NE(verdict, std::string::npos) << r.err;
  EXPECT_LT(summary, verdict) << r.err;
  EXPECT_NE(r.err.find(cls + ": rank 3", verdict), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("report: " + report_path), std::string::npos) << r.err;
  const auto report = readJson(report_path);
  ASSERT_TRUE(report.is_object()) << report_path;
  EXPECT_EQ(report["reason"], "failure");
  EXPECT_TRUE(report["failure"].is_string());
  ASSERT_TRUE(report["verdict"].is_object()) << report.dump(2);
  EXPECT_EQ(report["verdict"]["class"], cls);
  EXPECT_EQ(report["verdict"]["ranks"], nlohmann::json::array({3}));
  ASSERT_EQ(report["ranks"].size(), 4u);
  for (const auto& rank : report["ranks"]) EXPECT_FALSE(rank["running"].get<bool>());
}

// Rank 3 returns early; the others' next all-reduce fails on hostnccl and they exit 1.
TEST(CxxrunFailure, AnEarlyExitUnderTheShimGetsTheVerdictAndKeepsExitCode1) {
  ncclrec::support::TempDir dir;
  auto r = ncclrec::support::runProcess(scenario(dir.path(), "ex", "exited"), 90s);
  expectFailureVerdict(r, dir.path() + "/dumps/ex/attempt_0/report.json", "rank_exited");
  EXPECT_TRUE(
      std::regex_search(r.err, std::regex("first failure: rank [0-2] on [^,]+, exit code 1\\)")))
      << r.err;
}

TEST(CxxrunFailure, ACrashUnderTheShimGetsTheVerdictAndKeepsExitCode1) {
  ncclrec::support::TempDir dir;
  auto r = ncclrec::support::runProcess(scenario(dir.path(), "cr", "crashed"), 90s);
  expectFailureVerdict(r, dir.path() + "/dumps/cr/attempt_0/report.json", "rank_crashed");
  EXPECT_NE(r.err.find("  exitcode  : -9 (pid: "), std::string::npos) << r.err;
}

// Rank 3 sleeps in host code while the others wait for it in an all-reduce; rank 0 is then
// killed. Rank 3 is still running when cxxrun sees the failure: it dumps on cxxrun's trigger
// (the recorder does not dump on SIGTERM) before it is stopped.
TEST(CxxrunFailure, RanksStillRunningDumpBeforeTheyAreStopped) {
  ncclrec::support::TempDir dir;
  std::string error;
  auto p = ncclrec::support::Process::start(scenario(dir.path(), "st", "stuck_in_host"), &error);
  ASSERT_NE(p, nullptr) << error;
  const std::string attempt = dir.path() + "/dumps/st/attempt_0";
  // The ranks' pids from their black boxes (HOST.PID.bbox), their ranks from /proc/PID/environ.
  pid_t rank0 = -1;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (rank0 < 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(200ms);
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(attempt, ec)) {
      const std::string name = e.path().filename().string();
      if (name.size() < 6 || name.compare(name.size() - 5, 5, ".bbox") != 0) continue;
      const std::string stem = name.substr(0, name.size() - 5);
      const pid_t pid = std::atoi(stem.substr(stem.rfind('.') + 1).c_str());
      auto env = ncclrec::support::readFile("/proc/" + std::to_string(pid) + "/environ");
      if (env &&
          (std::string(1, '\0') + *env).find(std::string("\0RANK=0\0", 8)) != std::string::npos)
        rank0 = pid;
    }
  }
  ASSERT_GT(rank0, 0) << p->stderrSoFar();
  std::this_thread::sleep_for(500ms);  // rank 0 is now blocked in the all-reduce of step 2
  ASSERT_EQ(kill(rank0, SIGKILL), 0);
  auto r = p->wait(90s);
  EXPECT_TRUE(r.exitedWith(1)) << r.describe();
  EXPECT_NE(r.err.find("cxxrun: a worker failed; asking the other ranks to dump before stopping "
                       "them"),
            std::string::npos)
      << r.err;
  const auto report = readJson(attempt + "/report.json");
  ASSERT_TRUE(report.is_object()) << r.err;
  EXPECT_EQ(report["reason"], "failure");
  EXPECT_LT(report["waited_s"].get<double>(), 15) << report.dump(2);  // not the whole 20 s
  ASSERT_EQ(report["ranks"].size(), 4u);
  const auto& culprit = report["ranks"][3];
  ASSERT_TRUE(culprit["recording"].is_object()) << report.dump(2);
  EXPECT_EQ(culprit["recording"]["kind"], "dump");
  EXPECT_EQ(culprit["recording"]["dump_reason"], "trigger");
  EXPECT_TRUE(report["verdict"].is_object()) << report.dump(2);
}

// A rank's own watchdog (NCCLREC_TIMEOUT) declares the hang: cxxrun's live detection is off.
TEST(CxxrunHang, GatedSaveUnderTheShimEndsWithAReportAndExitCode3) {
  ncclrec::support::TempDir dir;
  SpawnOptions o = gatedSave(dir.path(), {}, "2");
  o.env["NCCLREC_WATCHER"] = "off";
  auto r = ncclrec::support::runProcess(o, 90s);
  EXPECT_TRUE(r.exitedWith(3)) << r.describe();
  // Whichever rank timed out first reports it.
  EXPECT_TRUE(
      std::regex_search(r.err, std::regex("cxxrun: hang reported \\(run gated, attempt 0\\) by "
                                          "rank [0-3]: ncclAllReduce #7")))
      << r.err;
  EXPECT_NE(r.err.find("report: " + dir.path() + "/dumps/gated/attempt_0/report.json"),
            std::string::npos)
      << r.err;
  const auto report = readJson(dir.path() + "/dumps/gated/attempt_0/report.json");
  expectFourRanksStuckInGatedSave(report, "hang", {"hang", "trigger"});
  // The analyzer's verdict, on screen and in the report.
  ASSERT_TRUE(report["verdict"].is_object()) << report.dump(2);
  EXPECT_EQ(report["verdict"]["class"], "rank_gated_collective");
  EXPECT_EQ(report["verdict"]["ranks"], nlohmann::json::array({0}));
  EXPECT_NE(r.err.find("rank_gated_collective: rank 0"), std::string::npos) << r.err;
}

// Default settings: cxxrun's live detector sees that no pending op can complete (rank 0's
// all-reduce #7 has another count) and the verdict follows within seconds, with its timeline.
TEST(CxxrunHang, LiveDetectionDecidesAGatedSaveWithinSeconds) {
  ncclrec::support::TempDir dir;
  SpawnOptions o = gatedSave(dir.path(), {}, "60");
  o.env.erase("NCCLREC_TIMEOUT");
  o.unset_env.push_back("NCCLREC_TIMEOUT");
  auto r = ncclrec::support::runProcess(o, 90s);
  EXPECT_TRUE(r.exitedWith(3)) << r.describe();
  EXPECT_TRUE(std::regex_search(
      r.err, std::regex("cxxrun: hang reported \\(run gated, attempt 0\\): hang \\(certain, no "
                        "progress for [0-9.]+ s\\): no pending op can complete")))
      << r.err;
  const auto report = readJson(dir.path() + "/dumps/gated/attempt_0/report.json");
  expectFourRanksStuckInGatedSave(report, "hang", {"trigger"});
  const auto& timeline = report["timeline"];
  ASSERT_TRUE(timeline.is_object()) << report.dump(2);
  EXPECT_LT(timeline["detected_after_s"].get<double>(), 5) << timeline.dump(2);
  EXPECT_LT(timeline["verdict_after_s"].get<double>(), 15) << timeline.dump(2);
  EXPECT_NE(r.err.find("cxxrun: timeline: the stall began at "), std::string::npos) << r.err;
}
TEST(CxxrunHang, SigintOnAStuckJobMakesEveryRankDumpThenStops) {
  ncclrec::support::TempDir dir;
  std::string error;
  // The watchdog's timeout is far away: only cxxrun's trigger can make the ranks dump.
  auto p = ncclrec::support::Process::start(gatedSave(dir.path(), {}, "600"), &error);
  ASSERT_NE(p, nullptr) << error;
  ASSERT_TRUE(p->waitForStdout("[rank3]:rank 3: step 5 done", 30s)) << p->stdoutSoFar();
  std::this_thread::sleep_for(500ms);  // every rank is now blocked in op 7
  p->signal(SIGINT);
  auto r = p->wait(60s);
  EXPECT_TRUE(r.exitedWith(130)) << r.describe();
  EXPECT_NE(r.err.find("cxxrun: SIGINT received: asking every rank to dump"), std::string::npos)
      << r.err;
  expectFourRanksStuckInGatedSave(readJson(dir.path() + "/dumps/gated/attempt_0/report.json"),
                                  "interrupt", {"trigger"});
}

TEST(CxxrunHang, OnHangWaitLeavesTheJobRunningUntilSigterm) {
  ncclrec::support::TempDir dir;
  std::string error;
  auto p = ncclrec::support::Process::start(gatedSave(dir.path(), {"--on-hang=wait"}, "2"), &error);
  ASSERT_NE(p, nullptr) << error;
  const std::string report = dir.path() + "/dumps/gated/attempt_0/report.json";
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (!fs::exists(report) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(100ms);
  ASSERT_TRUE(fs::exists(report)) << p->stderrSoFar();
  std::this_thread::sleep_for(1s);
  EXPECT_NE(p->stderrSoFar().find("--on-hang=wait: leaving the job running"), std::string::npos)
      << p->stderrSoFar();
  EXPECT_TRUE(p->signal(SIGTERM));  // still running
  auto r = p->wait(60s);
  EXPECT_TRUE(r.exitedWith(143)) << r.describe();
}

// Issue 31: rank 3's process stops (SIGSTOP) inside the all-reduce of step 2 that every rank
// enters, or just before it. Default settings: the live detector sees the stall, the stopped rank
// cannot dump (cxxrun does not wait for it: /proc says it is stopped), and the verdict names it
// from what /proc says, within seconds of the stop.
void expectStoppedRank3(const std::string& mode, const std::string& headline,
                        const std::string& state = "stopped", double host_stall_s = 0) {
  ncclrec::support::TempDir dir;
  SpawnOptions o = scenario(dir.path(), "fz", mode);
  if (host_stall_s > 0) o.env["NCCLREC_HOST_STALL"] = std::to_string(host_stall_s);
  auto r = ncclrec::support::runProcess(o, 90s);
  EXPECT_TRUE(r.exitedWith(3)) << r.describe();
  EXPECT_NE(r.err.find(headline), std::string::npos) << r.err;
  const auto report = readJson(dir.path() + "/dumps/fz/attempt_0/report.json");
  ASSERT_TRUE(report.is_object()) << r.err;
  ASSERT_TRUE(report["verdict"].is_object()) << report.dump(2);
  EXPECT_EQ(report["verdict"]["class"], "rank_not_running") << report.dump(2);
  EXPECT_EQ(report["verdict"]["ranks"], nlohmann::json::array({3}));
  ASSERT_EQ(report["ranks"].size(), 4u);
  for (const auto& rank : report["ranks"]) {
    SCOPED_TRACE(rank.dump());
    const bool culprit = rank["rank"] == 3;
    EXPECT_EQ(rank["process_state"], culprit ? state : "sleeping");
    // A process whose main thread sleeps uninterruptibly still dumps: its watchdog runs.
    EXPECT_EQ(rank["recording"]["kind"], culprit && state == "stopped" ? "bbox" : "dump");
  }
  // Not the whole NCCLREC_DUMP_WAIT (20 s) for a dump that cannot come.
  EXPECT_LT(report["waited_s"].get<double>(), 5) << report.dump(2);
  EXPECT_LT(report["timeline"]["verdict_after_s"].get<double>(), host_stall_s + 15)
      << report.dump(2);
  // The same verdict offline, from the recordings and report.json's process states.
  SpawnOptions analyze;
  analyze.argv = {NCCLREC_ANALYZE, dir.path() + "/dumps/fz/attempt_0"};
  auto offline = ncclrec::support::runProcess(analyze, 60s);
  EXPECT_TRUE(offline.exitedWith(3)) << offline.describe();
  EXPECT_EQ(offline.out.find("rank_not_running: rank 3 stopped running"), 0u) << offline.out;
}

TEST(CxxrunLiveness, ARankStoppedInsideTheCollectiveEveryRankEntered) {
  expectStoppedRank3("frozen",
                     "rank_not_running: rank 3 stopped running inside ncclAllReduce #3 on comm ");
}

// The main thread of rank 3 sleeps uninterruptibly (a vfork whose child does not exec) while its
// watchdog goes on: it dumps, and /proc says where its main thread waits. Uninterruptible sleep
// is no proof (a checkpoint written to a slow filesystem sleeps so too): the verdict comes at the
// host-stall threshold, 3 s here instead of the default 30 s.
TEST(CxxrunLiveness, ARankInUninterruptibleSleepBetweenTwoOps) {
  expectStoppedRank3("uninterruptible",
                     "rank_not_running: rank 3 stopped running between ops, after 2 all-reduces "
                     "from trainStep(): its process is in uninterruptible sleep in ",
                     "uninterruptible", 3);
}

TEST(CxxrunLiveness, ARankStoppedBetweenTwoOpsIsNotInHostCode) {
  expectStoppedRank3("frozen_between",
                     "rank_not_running: rank 3 stopped running between ops, after 2 all-reduces "
                     "from trainStep(): its process is stopped");
}

// Issue 31: inside the all-reduce #3 every rank entered, rank 2's messages to rank 3 stop arriving
// (hostnccl's HOSTNCCL_DROP_LINK: taken as sent, never delivered, as on a path that went dark after
// the sender's socket took them). Every process runs; the transport counters of NCCL's profiler
// plugin (NCCLREC_COMPLETION=profiler) say which connection stopped moving data.
TEST(CxxrunTransport, AConnectionThatStoppedMovingDataIsNamedWithBothEnds) {
  ncclrec::support::TempDir dir;
  SpawnOptions o = scenario(dir.path(), "tl", "no_hang");
  o.env["HOSTNCCL_DROP_LINK"] = "2>3@3";
  o.env["NCCLREC_COMPLETION"] = "profiler";
  auto r = ncclrec::support::runProcess(o, 90s);
  EXPECT_TRUE(r.exitedWith(3)) << r.describe();
  EXPECT_NE(r.err.find("transport_stalled: data stopped moving between rank 2 (host "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("inside ncclAllReduce #3 on comm "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" steps on channel 0 that rank 3 never received (its last send at "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("; rank 3 has 0 of the "), std::string::npos) << r.err;
  const auto report = readJson(dir.path() + "/dumps/tl/attempt_0/report.json");
  ASSERT_TRUE(report.is_object()) << r.err;
  ASSERT_TRUE(report["verdict"].is_object()) << report.dump(2);
  EXPECT_EQ(report["verdict"]["class"], "transport_stalled") << report.dump(2);
  EXPECT_EQ(report["verdict"]["ranks"], nlohmann::json::array({2, 3}));
  EXPECT_EQ(report["verdict"]["waiting"], nlohmann::json::array({0, 1}));
  EXPECT_LT(report["timeline"]["verdict_after_s"].get<double>(), 15) << report.dump(2);
  SpawnOptions analyze;
  analyze.argv = {NCCLREC_ANALYZE, dir.path() + "/dumps/tl/attempt_0"};
  auto offline = ncclrec::support::runProcess(analyze, 60s);
  EXPECT_TRUE(offline.exitedWith(3)) << offline.describe();
  EXPECT_EQ(offline.out.find("transport_stalled: data stopped moving between rank 2"), 0u)
      << offline.out;
}

// The same job without the fault, transport counters on: no alarm.
TEST(CxxrunTransport, AHealthyRunWithTransportCountersRaisesNoAlarm) {
  ncclrec::support::TempDir dir;
  SpawnOptions o = scenario(dir.path(), "tok", "no_hang");
  o.env["NCCLREC_COMPLETION"] = "profiler";
  auto r = ncclrec::support::runProcess(o, 90s);
  EXPECT_TRUE(r.exitedWith(0)) << r.describe();
  EXPECT_EQ(r.err.find("hang"), std::string::npos) << r.err;
}

}  // namespace
