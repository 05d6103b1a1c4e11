// End to end, no GPU: every sample of samples/ runs with 4 ranks under cxxrun --nccl=host with
// libncclrec.so preloaded. The C++ samples are NCCLREC_HOST_SAMPLES (samples/CMakeLists.txt); the
// Python ones, NCCLREC_PYTHON_SAMPLES, run with NCCLREC_PYTHON in each binding style of
// samples/python/ncclpy.py (handle: dlsym on libnccl's handle; global: dlsym in the global scope).
//   faulty: cxxrun must end as the sample's expected.json says (exit 3 and report.json for a
//           hang; 1 and report.json with reason "failure" when a rank dies, exits early or gets
//           an NCCL error, because cxxrun's fail-fast stops the job before anything hangs on
//           hostnccl; 0 for a straggler), and the verdict (report.json, or for a job that
//           succeeded ncclrec-analyze --json on the dumps) must name the expected class, culprit
//           ranks and call-site function, and the call site's file (base name) and line where
//           expected.json has them. For a hang it also prints the time from the hang to the
//           verdict (docs/performance.md).
//   healthy: cxxrun exits 0 and ncclrec-analyze finds no_hang in the dumps of all ranks.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "format/bbox_layout.h"
#include "format/op_type.h"
#include "format/reader.h"
#include "tests/support/process.h"

namespace {

using Json = nlohmann::json;
using ncclrec::support::ProcessResult;

constexpr const char* kRunId = "e2e";
// Default detection settings (no NCCLREC_TIMEOUT: cxxrun's live detector decides), but a rank in
// host code while the others wait is a hang after 3 s instead of 30, so that the suite stays fast.
constexpr double kHostStallS = 3;  // NCCLREC_HOST_STALL
// The bound for a verdict after the hang began, for every class but host stalls (3 s
// here).
constexpr double kVerdictWithinS = 15;
constexpr int kRanks = 4;

// A C++ sample (samples/<name>, the binary sample_<name>) or a Python one
// (samples/python/<name>/<name>.py, in one binding style).
struct Sample {
  std::string name;
  std::string binding;  // Python: "handle" or "global"; empty for a C++ sample
  // How libncclrec.so is loaded: preloaded (the wrappers record, completion as NCCLREC_COMPLETION
  // defaults); plugin-only (no LD_PRELOAD: NCCL_PROFILER_PLUGIN=libncclrec.so records, the way
  // to record programs that link NCCL statically); or preloaded with
  // NCCLREC_COMPLETION=profiler (the wrappers record, NCCL's profiler callbacks complete).
  enum class Way { kPreload, kPluginOnly, kProfilerCompletion } way = Way::kPreload;
  bool profiler() const { return way != Way::kPreload; }

  bool python() const { return !binding.empty(); }
  std::string sourceDir() const {
    return std::string(NCCLREC_SAMPLES_SRC) + (python() ? "/python/" : "/") + name;
  }
  // The program and its arguments, after cxxrun's own.
  std::vector<std::string> command(const std::string& mode) const {
    if (python()) return {NCCLREC_PYTHON, sourceDir() + "/" + name + ".py", mode, binding};
    return {std::string(NCCLREC_SAMPLES_BIN) + "/sample_" + name, mode};
  }
};

void PrintTo(const Sample& sample, std::ostream* os) {
  *os << (sample.python() ? "python " + sample.name + " (" + sample.binding + ")" : sample.name)
      << (sample.way == Sample::Way::kPluginOnly           ? " as profiler plugin"
          : sample.way == Sample::Way::kProfilerCompletion ? " with profiler completion"
                                                           : "");
}

std::vector<std::string> splitList(const std::string& csv) {
  std::vector<std::string> out;
  std::stringstream list(csv);
  for (std::string name; std::getline(list, name, ',');) {
    if (!name.empty()) out.push_back(name);
  }
  return out;
}

std::vector<Sample> cxxSamples() {
  std::vector<Sample> out;
  for (const std::string& name : splitList(NCCLREC_HOST_SAMPLES)) out.push_back({name, ""});
  return out;
}

std::vector<Sample> pythonSamples() {
  std::vector<Sample> out;
  for (const std::string& name : splitList(NCCLREC_PYTHON_SAMPLES)) {
    for (const char* binding : {"handle", "global"}) out.push_back({name, binding});
  }
  return out;
}

std::string baseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

Json readJson(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Json();
  return Json::parse(in, nullptr, /*allow_exceptions=*/false);
}

struct SampleRun {
  ProcessResult cxxrun;
  std::string dump_dir;  // the attempt's NCCLREC_DIR
};

SampleRun runSample(const ncclrec::support::TempDir& dir, const Sample& sample,
                    const std::string& mode) {
  ncclrec::support::SpawnOptions o;
  o.argv = {NCCLREC_CXXRUN,
            "--standalone",
            "--nproc-per-node",
            std::to_string(kRanks),
            "--nccl=host",
            "--monitor-interval",
            "0.05",
            "--run-id",
            kRunId};
  for (const std::string& arg : sample.command(mode)) o.argv.push_back(arg);
  o.env = {{"NCCLREC_DIR", dir.path() + "/dumps"},
           {"NCCLREC_HOST_STALL", std::to_string(kHostStallS)},
           {"NCCLREC_POLL_MS", "100"}};
  o.unset_env = {"CXXRUN_STORE",     "CXXRUN_TOKEN",    "NCCLREC_RUN_ID",
                 "HOSTNCCL_TIMEOUT", "NCCLREC_TIMEOUT", "NCCL_PROFILER_PLUGIN"};
  if (sample.way == Sample::Way::kPluginOnly) {
    o.unset_env.push_back("LD_PRELOAD");
    o.env["NCCL_PROFILER_PLUGIN"] = NCCLREC_SHIM;
  } else {
    o.ld_preload = NCCLREC_SHIM;
  }
  if (sample.way == Sample::Way::kProfilerCompletion) o.env["NCCLREC_COMPLETION"] = "profiler";
  if (sample.python()) {
    // The Python samples share the unique id through a file; no bytecode in the source tree.
    o.env["NCCLREC_SAMPLE_ID_FILE"] = dir.path() + "/unique.id";
    o.env["PYTHONDONTWRITEBYTECODE"] = "1";
    o.unset_env.push_back("NCCLPY_BINDING");
  }
  o.cwd = dir.path();
  return SampleRun{ncclrec::support::runProcess(o, std::chrono::seconds(90)),
                   dir.path() + "/dumps/" + kRunId + "/attempt_0"};
}

// ncclrec-analyze --json DIR: its exit code and document.
std::pair<int, Json> analyze(const std::string& dump_dir) {
  ncclrec::support::SpawnOptions o;
  o.argv = {NCCLREC_ANALYZE, "--json", dump_dir};
  const ProcessResult r = ncclrec::support::runProcess(o, std::chrono::seconds(60));
  return {r.exit_code, Json::parse(r.out, nullptr, false)};
}

// When the job stopped making progress: the issue time of the oldest op that never completed.
int64_t hangStartNs(const std::string& dump_dir) {
  auto loaded = ncclrec::format::loadPaths({dump_dir});
  if (!loaded.ok()) return 0;
  int64_t start = INT64_MAX;
  for (const auto& r : loaded.value().ranks) {
    for (const auto& e : r.events) {
      if (e.state == ncclrec::format::EventState::kEnqueued ||
          e.state == ncclrec::format::EventState::kStarted) {
        start = std::min(start, e.enqueueNs());
      }
    }
  }
  return start == INT64_MAX ? 0 : start;
}

// With profiler callbacks in use: each collective and p2p op is recorded once (per communicator,
// collective sequence numbers 1, 2, 3, ... with no repeat), and each one that completed was
// completed by the callbacks (kEventProfilerTimed); `completes`: some op must have completed (a
// faulty run may hang at its first collective).
void expectProfilerRecording(const std::string& dump_dir, bool completes) {
  auto loaded = ncclrec::format::loadPaths({dump_dir});
  ASSERT_TRUE(loaded.ok()) << dump_dir;
  size_t timed = 0;
  for (const auto& r : loaded.value().ranks) {
    std::map<uint64_t, uint64_t> last_seq;
    for (const auto& e : r.events) {
      const bool coll = ncclrec::format::isCollective(e.op);
      if (!coll && !ncclrec::format::isP2p(e.op)) continue;
      if (coll) {
        EXPECT_EQ(e.op_seq, last_seq[e.commId()] + 1)
            << "rank " << r.global_rank << " event " << e.index << ": recorded twice or skipped";
        last_seq[e.commId()] = e.op_seq;
      }
      if (e.state != ncclrec::format::EventState::kCompleted) continue;
      EXPECT_TRUE(e.flags & ncclrec::format::kEventProfilerTimed)
          << "rank " << r.global_rank << " event " << e.index << " completed without the profiler";
      ++timed;
    }
  }
  if (completes) EXPECT_GT(timed, 0u);
}

int64_t mtimeNs(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return 0;
  return int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
}

std::string stringOr(const Json& j, const std::string& fallback) {
  return j.is_string() ? j.get<std::string>() : fallback;
}

class SampleTest : public ::testing::TestWithParam<Sample> {
 protected:
  void SetUp() override {
    if (GetParam().python() && access(NCCLREC_PYTHON, X_OK) != 0)
      GTEST_SKIP() << "no Python interpreter at " << NCCLREC_PYTHON << " (NCCLREC_PYTHON)";
  }
};

TEST_P(SampleTest, FaultyRunGetsTheExpectedVerdict) {
  const Sample& sample = GetParam();
  const std::string expected_path = sample.sourceDir() + "/expected.json";
  const Json expected = readJson(expected_path);
  ASSERT_TRUE(expected.is_object()) << expected_path << " is missing or bad";
  const int want_exit = expected.value("cxxrun_exit", 3);
  ncclrec::support::TempDir dir("ncclrec-sample");
  const SampleRun run = runSample(dir, sample, "faulty");
  ASSERT_TRUE(run.cxxrun.exitedWith(want_exit)) << "cxxrun should exit " << want_exit << "\n"
                                                << run.cxxrun.describe();

  Json verdict;
  Json ranks;  // the analysis's per-rank entries (threads of the culprits among them)
  const std::string report = run.dump_dir + "/report.json";
  if (want_exit != 0) {
    const Json doc = readJson(report);
    ASSERT_TRUE(doc.is_object()) << "no readable " << report << "\n" << run.cxxrun.describe();
    // A failure keeps exit code 1; cxxrun prints the verdict after the failure summary.
    EXPECT_EQ(doc["reason"], want_exit == 3 ? "hang" : "failure") << doc.dump(2);
    if (want_exit == 1) {
      EXPECT_NE(run.cxxrun.err.find("cxxrun: verdict after the worker failure (run "),
                std::string::npos)
          << run.cxxrun.err;
    }
    verdict = doc["verdict"];
    if (doc["analysis"].is_object()) ranks = doc["analysis"].value("ranks", Json());
  } else {
    // The job succeeded, so cxxrun wrote no report: the analyzer on what the ranks left.
    const auto [code, doc] = analyze(run.dump_dir);
    ASSERT_TRUE(doc.is_object()) << "ncclrec-analyze exit " << code;
    verdict = doc["verdict"];
    ranks = doc.value("ranks", Json());
  }
  ASSERT_TRUE(verdict.is_object()) << verdict.dump() << "\n" << run.cxxrun.describe();
  if (sample.profiler()) expectProfilerRecording(run.dump_dir, false);
  const std::string got = verdict.dump(2);
  EXPECT_EQ(verdict["class"], expected["class"]) << got;
  EXPECT_EQ(verdict["ranks"], expected["ranks"]) << got;
  // The ranks merely blocked by the culprits, where the sample's expected.json names them.
  if (expected.contains("waiting")) {
    EXPECT_EQ(verdict["waiting"], expected["waiting"]) << got;
  }
  ASSERT_TRUE(verdict["callsite"].is_object()) << got;
  const Json& site = verdict["callsite"];
  EXPECT_EQ(site["function"], expected["function"]) << got;
  if (expected.contains("file")) {
    EXPECT_EQ(baseName(stringOr(site["file"], "")), expected["file"]) << got;
  }
  if (expected.contains("line")) {
    EXPECT_EQ(site["line"], expected["line"]) << got;
  }
  // Where the stopped rank is now, from its thread snapshot (analyzer/whereabouts.h).
  if (expected.contains("where")) {
    const std::string where = "is now in " + expected["where"].get<std::string>();
    EXPECT_NE(stringOr(verdict["headline"], "").find(where), std::string::npos)
        << "headline lacks '" << where << "': " << got;
  }
  // What the culprits' threads are doing, in the per-rank thread lists (e.g. a thread that cannot
  // answer the snapshot signal says so).
  if (expected.contains("threads_say")) {
    const std::string say = expected["threads_say"].get<std::string>();
    const std::string threads = ranks.dump(2);
    EXPECT_NE(threads.find(say), std::string::npos) << "threads lack '" << say << "': " << threads;
  }

  if (want_exit == 3) {
    // The report is written just before cxxrun prints it (report/hang_report.cc).
    const int64_t start = hangStartNs(run.dump_dir);
    const int64_t printed = mtimeNs(report);
    ASSERT_GT(start, 0) << "no op was left pending in the recordings";
    const double latency_s = static_cast<double>(printed - start) / 1e9;
    std::printf("[ latency  ] %s: hang to verdict %.2f s\n", sample.name.c_str(), latency_s);
    RecordProperty("hang_to_verdict_ms", static_cast<int>(latency_s * 1000));
    EXPECT_LT(latency_s, kVerdictWithinS) << run.cxxrun.describe();
    // cxxrun's live detector decided (not a rank's NCCLREC_TIMEOUT): the report's timeline.
    const Json timeline = readJson(report)["timeline"];
    ASSERT_TRUE(timeline.is_object()) << "report.json has no timeline\n" << run.cxxrun.describe();
    EXPECT_LE(timeline["detected_after_s"].get<double>(), timeline["verdict_after_s"].get<double>())
        << timeline.dump(2);
    EXPECT_NE(run.cxxrun.err.find("cxxrun: timeline: the stall began at "), std::string::npos)
        << run.cxxrun.err;
  }
}

TEST_P(SampleTest, HealthyRunFinishesWithNoHang) {
  const Sample& sample = GetParam();
  ncclrec::support::TempDir dir("ncclrec-sample");
  const SampleRun run = runSample(dir, sample, "healthy");
  ASSERT_TRUE(run.cxxrun.exitedWith(0)) << run.cxxrun.describe();
  const auto [code, doc] = analyze(run.dump_dir);
  ASSERT_TRUE(doc.is_object()) << "ncclrec-analyze exit " << code;
  EXPECT_EQ(code, 0) << doc.dump(2);
  EXPECT_EQ(doc["verdict"]["class"], "no_hang") << doc["verdict"].dump(2);
  EXPECT_EQ(doc["ranks"].size(), size_t{kRanks}) << doc["ranks"].dump(2);
  if (sample.profiler()) expectProfilerRecording(run.dump_dir, true);
}

// Test names: Samples/...<name> (C++), PythonSamples/...<name>_<binding>.
INSTANTIATE_TEST_SUITE_P(Samples, SampleTest, ::testing::ValuesIn(cxxSamples()),
                         [](const ::testing::TestParamInfo<Sample>& p) { return p.param.name; });
INSTANTIATE_TEST_SUITE_P(PythonSamples, SampleTest, ::testing::ValuesIn(pythonSamples()),
                         [](const ::testing::TestParamInfo<Sample>& p) {
                           return p.param.name + "_" + p.param.binding;
                         });

// Plugin-only mode (no LD_PRELOAD, NCCL_PROFILER_PLUGIN=libncclrec.so): C++ samples, and Python
// samples binding NCCL through a library handle (ctypes.CDLL: dlopen + dlsym, the stand-in for a
// program whose NCCL a preload cannot reach). Test names: PluginOnly/...<name>[_<binding>].
std::vector<Sample> pluginOnlySamples() {
  std::vector<Sample> out;
  for (const std::string& name : splitList(NCCLREC_PLUGIN_SAMPLES))
    out.push_back({name, "", Sample::Way::kPluginOnly});
  for (const std::string& name : splitList(NCCLREC_PLUGIN_PYTHON_SAMPLES))
    out.push_back({name, "handle", Sample::Way::kPluginOnly});
  return out;
}

// NCCLREC_COMPLETION=profiler under LD_PRELOAD: every C++ sample (the wrappers record as always).
std::vector<Sample> profilerCompletionSamples() {
  std::vector<Sample> out;
  for (const std::string& name : splitList(NCCLREC_HOST_SAMPLES))
    out.push_back({name, "", Sample::Way::kProfilerCompletion});
  return out;
}
INSTANTIATE_TEST_SUITE_P(ProfilerCompletion, SampleTest,
                         ::testing::ValuesIn(profilerCompletionSamples()),
                         [](const ::testing::TestParamInfo<Sample>& p) { return p.param.name; });
INSTANTIATE_TEST_SUITE_P(PluginOnly, SampleTest, ::testing::ValuesIn(pluginOnlySamples()),
                         [](const ::testing::TestParamInfo<Sample>& p) {
                           return p.param.name + (p.param.python() ? "_" + p.param.binding : "");
                         });

}  // namespace
