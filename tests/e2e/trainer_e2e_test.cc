// End to end, no GPU: ncclrec-trainer with 4 ranks under cxxrun + libncclrec.so + hostnccl, one
// run per --inject class. Each run must end as the class predicts (cxxrun exit 3 with a verdict,
// exit 1 when a rank died or left and the others failed fast, exit 0 for a slow rank), and the
// analyzer's JSON verdict (report.json written by cxxrun for a hang or a failure; for a job that
// succeeded, ncclrec-analyze --json on the dumps) must name the class, the culprit ranks and the
// call site. Each case prints the time from
// the fault (the culprit logs it with its wall-clock time) to the printed verdict.
#include <gtest/gtest.h>
#include <sys/types.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
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
using ncclrec::support::TempDir;

constexpr int kRanks = 4;

double unixSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

struct Case {
  std::string name;               // test name and run id
  std::vector<std::string> args;  // trainer arguments
  int cxxrun_exit;                // 3: cxxrun reported the hang; 1: a worker failed; 0: done
  std::string cls;                // expected verdict class
  std::vector<int> ranks;         // expected culprits
  std::string function;           // expected callsite.function ("" : not checked)
};

std::ostream& operator<<(std::ostream& os, const Case& c) { return os << c.name; }

struct Outcome {
  ProcessResult result;
  nlohmann::json verdict;
  std::string source;        // "report.json" or "ncclrec-analyze"
  double fault_t = 0;        // wall-clock time the culprit logged its fault (0: none)
  double verdict_t = 0;      // wall-clock time the verdict was printed
  std::string verdict_line;  // the first line of the verdict
};

// Alive and not a zombie.
bool running(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] != 'Z';
}

// The culprit's "inject ...: ... (t=SECONDS)" line.
double faultTime(const std::string& err) {
  std::smatch m;
  if (std::regex_search(err, m, std::regex(R"(: inject [a-z_]+: .*\(t=([0-9.]+)\))"))) {
    return std::stod(m[1]);
  }
  return 0;
}

Outcome runCase(const Case& c, const std::string& dir) {
  SpawnOptions o;
  o.argv = {CXXRUN_BIN, "--standalone", "--nproc-per-node",  std::to_string(kRanks), "--nccl=host",
            "--run-id", c.name,         NCCLREC_TRAINER_BIN, "--log-every",          "10"};
  o.argv.insert(o.argv.end(), c.args.begin(), c.args.end());
  o.ld_preload = NCCLREC_SHIM;
  o.env = {{"NCCLREC_DIR", dir + "/dumps"},
           // Short for the hangs; long where none is expected, so that a loaded machine cannot
           // turn a slow op into one.
           {"NCCLREC_TIMEOUT", c.cxxrun_exit == 0 ? "10" : "2"},
           {"NCCLREC_POLL_MS", "100"},
           {"NCCLREC_DUMP_WAIT", "10"}};
  o.cwd = dir;
  Outcome out;
  std::string error;
  auto job = Process::start(o, &error);
  if (job == nullptr) {
    out.result.error = error;
    return out;
  }
  // Watch for cxxrun's report as it is printed, to time it.
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  while (std::chrono::steady_clock::now() < deadline && out.verdict_t == 0) {
    const std::string err = job->stderrSoFar();
    if (err.find("cxxrun: hang reported") != std::string::npos ||
        err.find("cxxrun: verdict after the worker failure") != std::string::npos)
      out.verdict_t = unixSeconds();
    if (!running(job->pid())) break;
    std::this_thread::sleep_for(20ms);
  }
  out.result = job->wait(150s);
  out.fault_t = faultTime(out.result.err);
  const std::string attempt = dir + "/dumps/" + c.name + "/attempt_0";
  // cxxrun writes report.json for a hang and, under the shim, for a failure too; only a job that
  // succeeded (a straggler, a healthy run) needs the analyzer run by hand.
  if (c.cxxrun_exit != 0) {
    out.source = "report.json";
    std::ifstream in(attempt + "/report.json");
    out.verdict = nlohmann::json::parse(in, nullptr, false)["verdict"];
  } else {
    out.source = "ncclrec-analyze";
    SpawnOptions a;
    a.argv = {NCCLREC_ANALYZE_BIN, "--json", attempt};
    const ProcessResult r = ncclrec::support::runProcess(a, 60s);
    out.verdict_t = unixSeconds();
    const auto doc = nlohmann::json::parse(r.out, nullptr, false);
    if (!doc.is_discarded()) out.verdict = doc["verdict"];
  }
  if (out.verdict.is_object()) {
    out.verdict_line =
        out.verdict["class"].get<std::string>() + ": " + out.verdict["headline"].get<std::string>();
  }
  return out;
}

class TrainerInjectionTest : public ::testing::TestWithParam<Case> {};

TEST_P(TrainerInjectionTest, VerdictNamesTheClassTheCulpritAndTheCallSite) {
  const Case& c = GetParam();
  TempDir dir;
  const Outcome out = runCase(c, dir.path());
  ASSERT_TRUE(out.result.error.empty()) << out.result.error;
  ASSERT_FALSE(out.result.timed_out) << out.result.describe();
  EXPECT_TRUE(out.result.exitedWith(c.cxxrun_exit)) << out.result.describe();
  ASSERT_TRUE(out.verdict.is_object()) << out.source << "\n" << out.result.describe();
  EXPECT_EQ(out.verdict["class"], c.cls) << out.verdict.dump(2);
  EXPECT_EQ(out.verdict["ranks"], nlohmann::json(c.ranks)) << out.verdict.dump(2);
  if (!c.function.empty()) {
    // Qualified by its namespace: ncclrec::trainer::saveCheckpoint.
    const std::string function = out.verdict["callsite"]["function"].is_string()
                                     ? out.verdict["callsite"]["function"].get<std::string>()
                                     : "";
    EXPECT_TRUE(function.ends_with("::" + c.function)) << out.verdict.dump(2);
  }
  if (c.cxxrun_exit != 0) {
    EXPECT_EQ(out.source, "report.json");
    // The verdict is on cxxrun's stderr as the report's first line after the hang (or failure)
    // line.
    EXPECT_NE(out.result.err.find("\n" + out.verdict_line), std::string::npos) << out.result.err;
  }
  if (out.fault_t > 0 && out.verdict_t > 0) {
    std::printf("timing: %s: fault -> verdict %.2f s (%s)\n", c.name.c_str(),
                out.verdict_t - out.fault_t, out.source.c_str());
  }
  std::printf("verdict: %s: %s [%s]\n", c.name.c_str(), out.verdict_line.c_str(),
              out.verdict["callsite"].is_object()
                  ? out.verdict["callsite"]["function"].get<std::string>().c_str()
                  : "-");
}

const std::vector<std::string> kShort = {"--steps", "40", "--eval-every", "10"};

std::vector<std::string> with(std::vector<std::string> extra) {
  std::vector<std::string> args = kShort;
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

INSTANTIATE_TEST_SUITE_P(
    Injections, TrainerInjectionTest,
    ::testing::Values(
        Case{"gated_save",
             with({"--ckpt-dir", "ckpt", "--ckpt-every", "10", "--inject=gated_save"}),
             3,
             "rank_gated_collective",
             {0},
             "saveCheckpoint"},
        Case{"gated_eval_barrier",
             with({"--inject=gated_eval_barrier"}),
             3,
             "rank_gated_collective",
             {0},
             "evaluate"},
        // For a rank that stopped, the call site is its last op.
        Case{"uneven_data", with({"--inject=uneven_data"}), 1, "rank_exited", {3}, "agreeOnStop"},
        Case{"nan_skip",
             with({"--inject=nan_skip"}),
             3,
             "skipped_collective",
             {3},
             "allReduceBucket"},
        // Three gradient buckets: the culprit skips a run of three all-reduces.
        Case{"nan_skip_3_buckets",
             with({"--bucket-cap-mb", "0.001", "--inject=nan_skip"}),
             3,
             "skipped_collective",
             {3},
             "allReduceBucket"},
        Case{"crash", with({"--inject=crash"}), 1, "rank_crashed", {3}, "agreeOnStop"},
        Case{
            "host_hang", with({"--inject=host_hang"}), 3, "rank_stuck_in_host", {3}, "agreeOnStop"},
        Case{"size_mismatch",
             with({"--skip-shape-check", "--inject=size_mismatch"}),
             3,
             "size_mismatch",
             {3},
             "broadcastParameters"},
        Case{"op_order", with({"--inject=op_order"}), 3, "op_mismatch", {3}, "agreeOnStop"},
        Case{"slow_rank", with({"--inject=slow_rank"}), 0, "slow_rank", {3}, "allReduceBucket"},
        Case{"healthy_500_steps", {"--steps", "500", "--eval-every", "100"}, 0, "no_hang", {}, ""}),
    [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

}  // namespace

namespace {

// The trainer under cxxrun with default detection settings (no NCCLREC_TIMEOUT): cxxrun's live
// detector decides.
ProcessResult runLive(const std::string& dir, std::vector<std::string> args) {
  SpawnOptions o;
  o.argv = {CXXRUN_BIN,    "--standalone",      "--nproc-per-node", std::to_string(kRanks),
            "--nccl=host", NCCLREC_TRAINER_BIN, "--log-every",      "100"};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.ld_preload = NCCLREC_SHIM;
  o.env = {{"NCCLREC_DIR", dir + "/dumps"}};
  o.unset_env = {"NCCLREC_TIMEOUT",     "NCCLREC_HOST_STALL",   "NCCLREC_HOST_WARN",
                 "NCCLREC_STALL_FLOOR", "NCCLREC_STALL_FACTOR", "NCCLREC_WATCHER"};
  o.cwd = dir;
  return ncclrec::support::runProcess(o, 200s);
}

// Rank 0 spends 20 s in its checkpoint save while the others wait in saveCheckpoint's all-reduce:
// a warning, "resumed", and no hang.
TEST(TrainerLiveDetection, ATwentySecondCheckpointSaveIsNoHang) {
  TempDir dir;
  const ProcessResult r = runLive(
      dir.path(), {"--steps", "30", "--ckpt-dir", dir.path() + "/ckpt", "--ckpt-delay", "20"});
  EXPECT_TRUE(r.exitedWith(0)) << r.describe();
  EXPECT_TRUE(std::regex_search(
      r.err, std::regex("cxxrun: stalled [0-9.]+ s: ranks 1-3 wait in ncclAllReduce #[0-9]+ on "
                        "comm [0-9a-f]+ for rank 0, in host code since its ")))
      << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex("cxxrun: resumed after 2[0-9] s\n"))) << r.err;
  EXPECT_EQ(r.err.find("cxxrun: hang"), std::string::npos) << r.err;
}

// A healthy run of 1,000 steps with default settings: not a word from the detector.
TEST(TrainerLiveDetection, AThousandHealthyStepsSayNothing) {
  TempDir dir;
  const ProcessResult r = runLive(dir.path(), {"--steps", "1000", "--eval-every", "200"});
  EXPECT_TRUE(r.exitedWith(0)) << r.describe();
  EXPECT_EQ(r.err.find("cxxrun: stalled"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("cxxrun: hang"), std::string::npos) << r.err;
}

}  // namespace
