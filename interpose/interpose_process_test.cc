// End-to-end tests of libncclrec.so around the life of a process: fork, SIGKILL, fatal signals,
// exit, the watchdog, trigger files, an unusable NCCLREC_DIR, programs that never call NCCL, and
// the real NCCL library when it is installed.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "format/bbox_layout.h"
#include "format/reader.h"
#include "interpose/testing/shim_harness.h"

namespace ncclrec::interpose {
namespace {

namespace fs = std::filesystem;
using format::DumpReason;
using format::EventRecord;
using format::EventState;
using format::OpType;
using format::RankData;
using std::chrono::milliseconds;
using std::chrono::steady_clock;
using support::Process;
using support::ProcessResult;
using testing::Env;
using testing::eventsOf;
using testing::opsOf;
using testing::ShimHarness;

constexpr const char* kTriggerFile = "ncclrec.trigger";

// Sanitized builds run slower; deadlines on the recorder's own clocks get this much slack.
milliseconds slack() { return milliseconds(testing::sanitized() ? 2000 : 0); }

// Polls `dir` until a file whose name ends with `suffix` (and contains `part`) appears.
std::string waitForFile(const ShimHarness& h, const std::string& suffix, const std::string& part,
                        steady_clock::time_point deadline) {
  for (;;) {
    for (const std::string& f : h.files(suffix)) {
      if (fs::path(f).filename().string().find(part) != std::string::npos) return f;
    }
    if (steady_clock::now() >= deadline) return "";
    std::this_thread::sleep_for(milliseconds(20));
  }
}

std::string procStatusField(int pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return line.substr(field.size() + 1);
  }
  return "";
}

TEST(ShimProcessTest, ForkedChildRecordsIntoItsOwnBlackBox) {
  if (testing::sanitizedWith("thread")) {
    // The child's recorder starts a thread after a multi-threaded fork, which TSan does not
    // support ("dup thread with used id").
    GTEST_SKIP() << "ThreadSanitizer cannot follow threads created after a multi-threaded fork";
  }
  ShimHarness h;
  std::unique_ptr<Process> p =
      h.startCaller({"init:1:0", "allreduce:2", "fork", "allreduce:3", "exit:0"});
  ASSERT_TRUE(p);
  const int parent = p->pid();
  const ProcessResult r = p->wait(testing::kRunTimeout);
  ASSERT_TRUE(r.exitedWith(0)) << r.describe();
  const size_t at = r.out.find("fork rc=0 child=");
  ASSERT_NE(at, std::string::npos) << r.out;
  const int child = std::stoi(r.out.substr(at + 16));
  ASSERT_NE(child, parent);
  ASSERT_EQ(h.files(format::kBboxSuffix).size(), 2u);

  const RankData mine = h.blackBox(parent);
  EXPECT_EQ(opsOf(mine),
            (std::vector<OpType>{OpType::kCommInitRank, OpType::kAllReduce, OpType::kAllReduce}));
  EXPECT_TRUE(mine.exited);
  const RankData its = h.blackBox(child);
  EXPECT_EQ(opsOf(its),
            (std::vector<OpType>{OpType::kAllReduce, OpType::kAllReduce, OpType::kAllReduce}));
  for (const EventRecord& e : its.events) {
    EXPECT_EQ(e.tid(), static_cast<uint32_t>(child));
    EXPECT_EQ(e.state, EventState::kCompleted);
  }
  EXPECT_TRUE(its.exited);
  // Both wrote their own exit dump.
  std::vector<int> dumped;
  for (const RankData& d : h.dumps(DumpReason::kExit)) dumped.push_back(d.pid);
  std::sort(dumped.begin(), dumped.end());
  EXPECT_EQ(dumped, (std::vector<int>{std::min(parent, child), std::max(parent, child)}));
}

TEST(ShimProcessTest, SigkilledProcessLeavesItsWholeHistory) {
  ShimHarness h;
  const ProcessResult r = h.runCaller({"init:1:0", "allreduce:1000", "kill"});
  ASSERT_EQ(r.term_signal, SIGKILL) << r.describe();
  const RankData box = h.blackBox();
  const std::vector<EventRecord> events = eventsOf(box, OpType::kAllReduce);
  ASSERT_EQ(events.size(), 1000u);
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].op_seq, i + 1);
    EXPECT_EQ(events[i].state, EventState::kCompleted);
  }
  EXPECT_EQ(box.events_lost, 0u);
  EXPECT_FALSE(box.exited);
  EXPECT_EQ(box.exit_ns, 0);
  EXPECT_EQ(box.fatal_signal, 0);
  EXPECT_TRUE(h.files(format::kDumpSuffix).empty());
}

TEST(ShimProcessTest, FatalSignalIsMarkedAndStillKills) {
  ShimHarness h;
  // A sanitizer would turn the fault into a report and an exit status.
  Env env;
  if (testing::sanitizedWith("address")) env["ASAN_OPTIONS"] = "handle_segv=0";
  if (testing::sanitizedWith("thread")) env["TSAN_OPTIONS"] = "handle_segv=0";
  const ProcessResult r = h.runCaller({"init:1:0", "allreduce:2", "segv", "exit:0"}, env);
  ASSERT_EQ(r.term_signal, SIGSEGV) << r.describe();
  EXPECT_EQ(r.out, "init:1:0 rc=0\nallreduce:2 rc=0\nsegv rc=0\n");
  const RankData box = h.blackBox();
  EXPECT_EQ(box.fatal_signal, SIGSEGV);
  EXPECT_GT(box.fatal_ns, 0);
  EXPECT_FALSE(box.exited);
  EXPECT_EQ(box.events.size(), 3u);
}

TEST(ShimProcessTest, ExitMarksTheBoxAndDumpsWithSymbolizedCallSites) {
  ShimHarness h;
  const ProcessResult r = h.runCaller({"init:1:0", "allreduce:2", "exit:3"});
  ASSERT_TRUE(r.exitedWith(3)) << r.describe();
  EXPECT_EQ(r.err, "");
  const RankData box = h.blackBox();
  EXPECT_TRUE(box.exited);
  EXPECT_GE(box.exit_ns, box.events.back().endNs());
  const std::vector<RankData> dumps = h.dumps(DumpReason::kExit);
  ASSERT_EQ(dumps.size(), 1u);
  const RankData& dump = dumps[0];
  EXPECT_TRUE(dump.exited);
  EXPECT_EQ(dump.dump_reason, DumpReason::kExit);
  ASSERT_EQ(dump.events.size(), 3u);
  // The call site of ncclCommInitRank is nccl_caller's code, not a frame of the shim.
  const auto stack = dump.stacks.find(dump.events[0].stackId());
  ASSERT_NE(stack, dump.stacks.end());
  EXPECT_TRUE(stack->second.symbolized);
  ASSERT_FALSE(stack->second.frames.empty());
  const format::Frame& site = stack->second.frames[0];
  EXPECT_EQ(fs::path(site.module).filename(), "nccl_caller") << site.module;
  EXPECT_NE(site.function.find("Caller::"), std::string::npos) << site.function;
  EXPECT_EQ(site.function.find("ncclCommInitRank"), std::string::npos) << site.function;
  for (const format::Frame& f : stack->second.frames)
    EXPECT_EQ(fs::path(f.module).filename().string().find("libncclrec"), std::string::npos)
        << f.module << " " << f.function;
}

TEST(ShimProcessTest, WatchdogDumpsAnOpThatNeverCompletes) {
  ShimHarness h;
  std::unique_ptr<Process> p =
      h.startCaller({"init:2:0", "allreduce:1", "exit:0"},
                    {{"STUB_NCCL_BLOCK", "ncclAllReduce:-1"}, {"NCCLREC_TIMEOUT", "1"}});
  ASSERT_TRUE(p);
  ASSERT_TRUE(p->waitForStdout("init:2:0 rc=0\n", milliseconds(10000))) << p->stderrSoFar();
  const auto issued = steady_clock::now();  // the allreduce starts right after that line
  const std::string hang = waitForFile(h, ".hang" + std::string(format::kDumpSuffix), "",
                                       issued + milliseconds(3000) + slack());
  ASSERT_FALSE(hang.empty()) << "no hang dump within NCCLREC_TIMEOUT + 2 s; stderr: "
                             << p->stderrSoFar();
  auto dump = format::loadDump(hang);
  ASSERT_TRUE(dump.ok()) << dump.status().message();
  EXPECT_EQ(dump->dump_reason, DumpReason::kHang);
  ASSERT_EQ(dump->hang_event_index, 1);
  ASSERT_EQ(dump->events.size(), 2u);
  EXPECT_EQ(dump->events[1].op, OpType::kAllReduce);
  EXPECT_EQ(dump->events[1].state, EventState::kEnqueued);
  EXPECT_EQ(dump->events[1].op_seq, 1u);
  EXPECT_NE(dump->dump_detail.find("ncclAllReduce"), std::string::npos) << dump->dump_detail;
  // The job-wide trigger file names this process; the live box says which op hung.
  // Written after the local dump: it may lag the dump by a moment.
  ASSERT_FALSE(waitForFile(h, kTriggerFile, "", issued + milliseconds(3000) + slack()).empty());
  const auto trigger = support::readFile(h.recordDir() + "/" + kTriggerFile);
  ASSERT_TRUE(trigger.has_value());
  EXPECT_NE(trigger->find("pid=" + std::to_string(p->pid()) + "\n"), std::string::npos) << *trigger;
  EXPECT_NE(trigger->find("reason=hang\n"), std::string::npos) << *trigger;
  EXPECT_EQ(h.blackBox().hang_event_index, 1);
  // The process itself is left alone: still blocked in the call.
  EXPECT_EQ(p->stdoutSoFar(), "init:2:0 rc=0\n");
  EXPECT_TRUE(p->signal(SIGKILL));
  EXPECT_EQ(p->wait(milliseconds(5000)).term_signal, SIGKILL);
}

// Process A hangs and writes the trigger file; B (same run id, busy sleeping) dumps within a poll
// period; C shares the directory but belongs to another run and must not dump.
TEST(ShimProcessTest, TriggerFileMakesTheOtherProcessesOfTheRunDump) {
  ShimHarness h;
  const Env quiet = {{"NCCLREC_TIMEOUT", "60"}, {"NCCLREC_RUN_ID", "job-1"}};
  std::unique_ptr<Process> b = h.startCaller({"init:2:1", "sleep:3000", "exit:0"}, quiet);
  std::unique_ptr<Process> c =
      h.startCaller({"init:2:1", "sleep:3000", "exit:0"},
                    {{"NCCLREC_TIMEOUT", "60"}, {"NCCLREC_RUN_ID", "job-2"}});
  ASSERT_TRUE(b && c);
  // Their watchdogs must be running before the trigger is written, or it looks stale to them.
  ASSERT_TRUE(b->waitForStdout("init:2:1 rc=0\n", milliseconds(10000))) << b->stderrSoFar();
  ASSERT_TRUE(c->waitForStdout("init:2:1 rc=0\n", milliseconds(10000))) << c->stderrSoFar();
  std::unique_ptr<Process> a =
      h.startCaller({"init:2:0", "allreduce:1"}, {{"STUB_NCCL_BLOCK", "ncclAllReduce:-1"},
                                                  {"NCCLREC_TIMEOUT", "1"},
                                                  {"NCCLREC_RUN_ID", "job-1"}});
  ASSERT_TRUE(a);
  const std::string trigger_path = h.recordDir() + "/" + kTriggerFile;
  const auto deadline = steady_clock::now() + milliseconds(2500) + slack();
  struct stat st {};
  while (stat(trigger_path.c_str(), &st) != 0 && steady_clock::now() < deadline)
    std::this_thread::sleep_for(milliseconds(10));
  ASSERT_EQ(stat(trigger_path.c_str(), &st), 0) << "A wrote no trigger: " << a->stderrSoFar();
  const auto seen = steady_clock::now();
  const std::string b_name = "." + std::to_string(b->pid()) + ".";
  const std::string dumped = waitForFile(h, ".trigger" + std::string(format::kDumpSuffix), b_name,
                                         seen + milliseconds(1000) + slack());
  ASSERT_FALSE(dumped.empty()) << "B did not dump within 1 s of the trigger";
  auto dump = format::loadDump(dumped);
  ASSERT_TRUE(dump.ok()) << dump.status().message();
  EXPECT_EQ(dump->dump_reason, DumpReason::kTrigger);
  EXPECT_EQ(dump->run_id, "job-1");
  EXPECT_NE(dump->dump_detail.find("pid=" + std::to_string(a->pid())), std::string::npos)
      << dump->dump_detail;
  EXPECT_TRUE(b->wait(testing::kRunTimeout).exitedWith(0));
  EXPECT_TRUE(c->wait(testing::kRunTimeout).exitedWith(0));
  // Only B dumped on the trigger: not C (another run), not A (its own trigger).
  EXPECT_EQ(h.dumps(DumpReason::kTrigger).size(), 1u);
}

// The shim cannot record here: one warning, then the program runs as if it were not there.
TEST(ShimProcessTest, UnusableDirectoryWarnsOnceAndChangesNothing) {
  const std::vector<std::string> ops = {"init:1:0", "allreduce:3", "checksum",
                                        "bcast:2",  "asyncerror",  "destroy"};
  ShimHarness plain;
  const ProcessResult without = plain.runCaller(ops, {}, /*preload=*/false);
  ShimHarness h;
  const std::string blocker = h.scratch().file("not-a-directory");
  std::ofstream(blocker) << "x";
  const ProcessResult with = h.runCaller(ops, {{"NCCLREC_DIR", blocker + "/rec"}});
  ASSERT_TRUE(without.exitedWith(0)) << without.describe();
  EXPECT_TRUE(with.exitedWith(0)) << with.describe();
  EXPECT_EQ(with.out, without.out);
  EXPECT_EQ(without.err, "");
  EXPECT_EQ(testing::lineCount(with.err), 1) << with.err;
  EXPECT_NE(with.err.find("ncclrec"), std::string::npos) << with.err;
  EXPECT_NE(with.err.find(blocker), std::string::npos) << with.err;
}

// LD_PRELOAD reaches every process of a job; one that never calls NCCL gets no directory, no
// file, no thread, no signal handler and no output from us.
TEST(ShimProcessTest, ProgramThatNeverCallsNcclIsUntouched) {
  ShimHarness h;
  std::vector<std::vector<std::string>> programs = {{testing::callerPath()},
                                                    {testing::callerPath(), "sleep:10"}};
  // An uninstrumented program cannot take an instrumented preload without the sanitizer runtime.
  if (!testing::sanitized()) programs.push_back({"/bin/true"});
  for (const auto& argv : programs) {
    const ProcessResult r = support::runProcess(h.options(argv), testing::kRunTimeout);
    EXPECT_TRUE(r.exitedWith(0)) << argv.back() << ": " << r.describe();
    EXPECT_EQ(r.err, "") << argv.back();
  }
  // While it runs: the same threads and caught signals as without the shim.
  std::string caught[2];
  for (int preload = 0; preload < 2; ++preload) {
    std::string error;
    std::unique_ptr<Process> p = Process::start(
        h.options({testing::callerPath(), "sleep:1", "sleep:600"}, {}, preload == 1), &error);
    ASSERT_TRUE(p) << error;
    ASSERT_TRUE(p->waitForStdout("sleep:1 rc=0\n", milliseconds(10000)));
    EXPECT_EQ(procStatusField(p->pid(), "Threads"), "\t1") << "preload " << preload;
    caught[preload] = procStatusField(p->pid(), "SigCgt");
    EXPECT_TRUE(p->wait(testing::kRunTimeout).exitedWith(0));
  }
  EXPECT_FALSE(caught[0].empty());
  EXPECT_EQ(caught[1], caught[0]);
  EXPECT_FALSE(fs::exists(h.recordDir()));
  EXPECT_TRUE(fs::is_empty(h.scratch().path()));
}

#ifdef NCCLREC_TEST_REAL_NCCL_PROBE
// real_nccl_probe is linked to the installed NCCL. Without a GPU driver ncclCommInitRank fails;
// the shim must forward NCCL's own codes and record them.
TEST(ShimRealNcclTest, RecordsTheRealLibrarysResults) {
  // LeakSanitizer's exit-time scan crashes ("Tracer caught signal 11") among the threads the real
  // (uninstrumented) NCCL leaves behind; its leaks are not ours to find anyway.
  Env env;
  if (testing::sanitizedWith("address")) env["ASAN_OPTIONS"] = "detect_leaks=0";
  ShimHarness plain;
  support::SpawnOptions o = plain.options({NCCLREC_TEST_REAL_NCCL_PROBE}, env, false);
  o.env.erase("LD_LIBRARY_PATH");  // the probe finds the real NCCL through its RUNPATH
  o.unset_env.push_back("LD_LIBRARY_PATH");
  const ProcessResult without = support::runProcess(o, testing::kRunTimeout);
  ASSERT_TRUE(without.exitedWith(0)) << without.describe();
  int got_id = -1, init = -1;
  ASSERT_EQ(
      std::sscanf(without.out.c_str(), "ncclGetUniqueId %d\nncclCommInitRank %d", &got_id, &init),
      2)
      << without.out;

  ShimHarness h;
  support::SpawnOptions w = h.options({NCCLREC_TEST_REAL_NCCL_PROBE}, env);
  w.env.erase("LD_LIBRARY_PATH");
  w.unset_env.push_back("LD_LIBRARY_PATH");
  const ProcessResult with = support::runProcess(w, testing::kRunTimeout);
  ASSERT_TRUE(with.exitedWith(0)) << with.describe();
  EXPECT_EQ(with.out, without.out);

  const RankData box = h.blackBox();
  ASSERT_GE(box.events.size(), 2u);
  EXPECT_EQ(box.events[0].op, OpType::kGetUniqueId);
  EXPECT_EQ(box.events[0].result, 0);
  EXPECT_EQ(got_id, 0);
  EXPECT_EQ(box.events[1].op, OpType::kCommInitRank);
  EXPECT_EQ(box.events[1].result, init);
  if (init == 0) {  // a machine with a GPU driver
    EXPECT_EQ(box.events[1].state, EventState::kCompleted);
    ASSERT_EQ(box.comms.size(), 1u);
    EXPECT_EQ(box.comms[0].nranks, 1);
    EXPECT_EQ(opsOf(box).back(), OpType::kCommDestroy);
  } else {
    EXPECT_EQ(box.events[1].state, EventState::kFailed);
    // No communicator, but the attempt is recorded (with whatever device could be learnt).
    ASSERT_EQ(box.comms.size(), 1u);
    EXPECT_EQ(box.comms[0].state, format::kCommCreating | format::kCommInitFailed);
    EXPECT_EQ(box.comms[0].init_result, init);
    EXPECT_EQ(box.comms[0].handle, 0u);
    EXPECT_EQ(box.events.size(), 2u);
  }
}
#endif

}  // namespace
}  // namespace ncclrec::interpose
