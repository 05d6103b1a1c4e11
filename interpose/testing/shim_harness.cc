#include "interpose/testing/shim_harness.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "format/params_table.h"
#include "format/reader.h"

namespace ncclrec::interpose::testing {
namespace fs = std::filesystem;

const char* shimPath() { return NCCLREC_TEST_SHIM; }
const char* callerPath() { return NCCLREC_TEST_CALLER; }
const char* stubNcclDir() { return NCCLREC_TEST_STUB_DIR; }
bool sanitizedWith(const char* name) {
  const std::string list = std::string(",") + NCCLREC_TEST_SANITIZE + ",";
  return list.find(std::string(",") + name + ",") != std::string::npos;
}
bool sanitized() { return NCCLREC_TEST_SANITIZE[0] != '\0'; }

namespace {

// Sanitizer runtimes check things that a preloaded instrumented library breaks on purpose.
void addSanitizerOptions(Env* env) {
  const bool address = sanitizedWith("address");
  const char* var = address ? "ASAN_OPTIONS" : sanitizedWith("thread") ? "TSAN_OPTIONS" : "";
  if (*var == '\0') return;
  std::string value;
  if (auto it = env->find(var); it != env->end()) {
    value = it->second;
  } else if (const char* inherited = std::getenv(var)) {
    value = inherited;
  }
  if (address) {
    // libncclrec.so comes before the program's libasan in the initial library list.
    // intercept_tls_get_addr=0: GCC 12's LeakSanitizer guesses the bounds of a dlopen'ed
    // library's thread-local block from a glibc 2.19 header whenever the block starts 16 bytes
    // into a page; with glibc 2.36 that header is not there, the guessed bounds are garbage and
    // LSan's tracer dies with SIGSEGV at exit. Where the block lands depends on the heap's
    // layout, so the stub NCCL's 260-byte block hit it in some builds and not others. Without
    // the interception LSan skips those blocks as roots: the stub's holds no pointers, and
    // hostnccl's one vector is destroyed at exit, before LSan looks.
    value += ":verify_asan_link_order=0:intercept_tls_get_addr=0";
    // What that leaves unscanned, libcrypto's per-thread state, is not ours (lsan.supp).
    std::string lsan = env->count("LSAN_OPTIONS") ? env->at("LSAN_OPTIONS") : "";
    lsan += std::string(lsan.empty() ? "" : ":") +
            "print_suppressions=0:suppressions=" + NCCLREC_TEST_LSAN_SUPPRESSIONS;
    (*env)["LSAN_OPTIONS"] = lsan;
  } else {
    // libunwind's per-thread destructor (dlopen'ed, uninstrumented) takes a mutex after TSan has
    // torn down the exiting thread's state, and TSan's interceptor crashes: every thread that
    // made a recorded call would die with SIGSEGV at exit. Frame pointers have no such hook.
    env->emplace("NCCLREC_UNWIND", "fp");
  }
  (*env)[var] = value;
}

}  // namespace

ShimHarness::ShimHarness() : scratch_("ncclrec-shim-test") { record_dir_ = scratch_.file("rec"); }

support::SpawnOptions ShimHarness::options(std::vector<std::string> argv, const Env& env,
                                           bool preload) const {
  support::SpawnOptions o;
  o.argv = std::move(argv);
  for (const format::ParamSpec& p : format::allParams()) o.unset_env.emplace_back(p.name);
  for (const char* name : {"STUB_NCCL_BLOCK", "STUB_NCCL_RESULT", "STUB_NCCL_ASYNC_ERROR",
                           "STUB_NCCL_DEVICE", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LD_PRELOAD"})
    o.unset_env.emplace_back(name);
  o.env = env;
  o.env.emplace("NCCLREC_DIR", record_dir_);
  // The stub's "streams" are null pointers: on a machine with a CUDA driver, auto completion would
  // time them with CUDA events and make the recorded states depend on the machine.
  o.env.emplace("NCCLREC_COMPLETION", "host");
  // What these tests check is the shim's own watchdog and trigger file: no ncclrec-watch from the
  // build tree (recorder/watch_spawn_test.cc and the launchers' live tests cover it).
  o.env.emplace("NCCLREC_WATCHER", "off");
  std::string library_path = stubNcclDir();
  if (const char* inherited = std::getenv("LD_LIBRARY_PATH"); inherited && *inherited)
    library_path += std::string(":") + inherited;
  o.env.emplace("LD_LIBRARY_PATH", library_path);
  addSanitizerOptions(&o.env);
  if (preload) o.ld_preload = shimPath();
  return o;
}

support::SpawnOptions ShimHarness::callerOptions(const std::vector<std::string>& ops,
                                                 const Env& env, bool preload) const {
  std::vector<std::string> argv = {callerPath()};
  argv.insert(argv.end(), ops.begin(), ops.end());
  return options(std::move(argv), env, preload);
}

support::ProcessResult ShimHarness::runCaller(const std::vector<std::string>& ops, const Env& env,
                                              bool preload) const {
  return support::runProcess(callerOptions(ops, env, preload), kRunTimeout);
}

std::unique_ptr<support::Process> ShimHarness::startCaller(const std::vector<std::string>& ops,
                                                           const Env& env) const {
  std::string error;
  auto p = support::Process::start(callerOptions(ops, env), &error);
  if (p == nullptr) ADD_FAILURE() << "cannot start nccl_caller: " << error;
  return p;
}

std::vector<std::string> ShimHarness::files(std::string_view suffix) const {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(record_dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() >= suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      out.push_back(it->path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

format::RankData ShimHarness::blackBox(int pid) const {
  std::vector<format::RankData> found;
  for (const std::string& path : files(format::kBboxSuffix)) {
    auto data = format::loadBlackBox(path);
    if (!data.ok()) {
      ADD_FAILURE() << data.status().message();
      continue;
    }
    if (pid == 0 || data->pid == pid) found.push_back(std::move(data).value());
  }
  if (found.size() != 1) {
    ADD_FAILURE() << "expected one black box" << (pid != 0 ? " of pid " + std::to_string(pid) : "")
                  << " in " << record_dir_ << ", found " << found.size();
    return {};
  }
  return found.front();
}

std::vector<format::RankData> ShimHarness::dumps(format::DumpReason reason) const {
  const std::string suffix =
      "." + std::string(format::dumpReasonName(reason)) + std::string(format::kDumpSuffix);
  std::vector<format::RankData> out;
  for (const std::string& path : files(suffix)) {
    auto data = format::loadDump(path);
    if (!data.ok()) {
      ADD_FAILURE() << data.status().message();
      continue;
    }
    EXPECT_EQ(data->dump_reason, reason) << path;
    out.push_back(std::move(data).value());
  }
  return out;
}

std::vector<format::EventRecord> eventsOf(const format::RankData& rank, format::OpType op) {
  std::vector<format::EventRecord> out;
  for (const format::EventRecord& e : rank.events)
    if (e.op == op) out.push_back(e);
  return out;
}

std::vector<format::OpType> opsOf(const format::RankData& rank) {
  std::vector<format::OpType> out;
  for (const format::EventRecord& e : rank.events) out.push_back(e.op);
  return out;
}

const format::Comm* commById(const format::RankData& rank, uint64_t comm_id) {
  for (const format::Comm& c : rank.comms)
    if (c.comm_id == comm_id) return &c;
  return nullptr;
}

int lineCount(const std::string& text) {
  int n = static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  if (!text.empty() && text.back() != '\n') ++n;
  return n;
}

}  // namespace ncclrec::interpose::testing

namespace ncclrec::format {
void PrintTo(OpType op, std::ostream* os) { *os << opName(op); }
}  // namespace ncclrec::format
