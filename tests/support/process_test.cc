#include "tests/support/process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

namespace ncclrec::support {
namespace {

using std::chrono::milliseconds;
constexpr milliseconds kGenerous(20000);

TEST(ProcessTest, CapturesOutputAndExitCode) {
  SpawnOptions options;
  options.argv = {"/bin/sh", "-c", "echo out; echo err >&2; exit 3"};
  const ProcessResult r = runProcess(options, kGenerous);
  EXPECT_TRUE(r.exitedWith(3)) << r.describe();
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
}

TEST(ProcessTest, PassesArgumentsVerbatimWithoutAShell) {
  SpawnOptions options;
  options.argv = {"/bin/echo", "a b", "$HOME", "'q'", "*"};
  const ProcessResult r = runProcess(options, kGenerous);
  ASSERT_TRUE(r.exitedWith(0)) << r.describe();
  EXPECT_EQ(r.out, "a b $HOME 'q' *\n");
}

TEST(ProcessTest, SetsUnsetsAndPreloadsEnvironment) {
  ASSERT_EQ(setenv("NCCLREC_PROCESS_TEST_INHERITED", "yes", 1), 0);
  ASSERT_EQ(setenv("NCCLREC_PROCESS_TEST_DROPPED", "yes", 1), 0);
  SpawnOptions options;
  options.argv = {"/usr/bin/env"};
  options.env = {{"NCCLREC_PROCESS_TEST_SET", "a=b c"}};
  options.unset_env = {"NCCLREC_PROCESS_TEST_DROPPED"};
  // A library every process has loaded anyway, so preloading it changes nothing else.
  options.ld_preload = "libc.so.6";
  ProcessResult r = runProcess(options, kGenerous);
  ASSERT_TRUE(r.exitedWith(0)) << r.describe();
  EXPECT_NE(r.out.find("\nNCCLREC_PROCESS_TEST_SET=a=b c\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("NCCLREC_PROCESS_TEST_INHERITED=yes\n"), std::string::npos);
  EXPECT_EQ(r.out.find("NCCLREC_PROCESS_TEST_DROPPED"), std::string::npos);
  EXPECT_NE(r.out.find("LD_PRELOAD=libc.so.6\n"), std::string::npos);

  options.inherit_env = false;
  r = runProcess(options, kGenerous);
  ASSERT_TRUE(r.exitedWith(0)) << r.describe();
  EXPECT_EQ(r.out, "LD_PRELOAD=libc.so.6\nNCCLREC_PROCESS_TEST_SET=a=b c\n");
  unsetenv("NCCLREC_PROCESS_TEST_INHERITED");
  unsetenv("NCCLREC_PROCESS_TEST_DROPPED");
}

TEST(ProcessTest, RunsInTheGivenDirectory) {
  TempDir dir;
  SpawnOptions options;
  options.argv = {"/bin/pwd"};
  options.cwd = dir.path();
  const ProcessResult r = runProcess(options, kGenerous);
  ASSERT_TRUE(r.exitedWith(0)) << r.describe();
  EXPECT_EQ(r.out, dir.path() + "\n");
}

TEST(ProcessTest, ReportsAProgramThatCannotStart) {
  SpawnOptions options;
  options.argv = {"/nonexistent/program"};
  const ProcessResult r = runProcess(options, kGenerous);
  EXPECT_NE(r.error.find("/nonexistent/program"), std::string::npos) << r.error;
  EXPECT_FALSE(r.exitedWith(0));
  EXPECT_NE(r.describe().find("not started"), std::string::npos);
  std::string error;
  EXPECT_EQ(Process::start(SpawnOptions{}, &error), nullptr);
  EXPECT_EQ(error, "empty argv");
}

TEST(ProcessTest, ReportsTheSignalThatEndedIt) {
  SpawnOptions options;
  options.argv = {"/bin/sh", "-c", "kill -TERM $$"};
  const ProcessResult r = runProcess(options, kGenerous);
  EXPECT_EQ(r.term_signal, SIGTERM) << r.describe();
  EXPECT_EQ(r.exit_code, -1);
}

TEST(ProcessTest, TimeoutKillsTheWholeProcessGroup) {
  TempDir dir;
  const std::string marker = dir.file("grandchild-ran");
  SpawnOptions options;
  // The grandchild would write the marker after a second unless the group kill reaches it.
  options.argv = {"/bin/sh", "-c", "(sleep 1; touch " + marker + ") & sleep 60"};
  const auto start = std::chrono::steady_clock::now();
  const ProcessResult r = runProcess(options, milliseconds(200));
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(5000));
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.term_signal, SIGKILL);
  std::this_thread::sleep_for(milliseconds(1500));
  EXPECT_FALSE(readFile(marker).has_value());
}

TEST(ProcessTest, LargeOutputDoesNotBlockTheChild) {
  SpawnOptions options;
  options.argv = {"/usr/bin/head", "-c", "3000000", "/dev/zero"};
  const ProcessResult r = runProcess(options, kGenerous);
  ASSERT_TRUE(r.exitedWith(0)) << r.error;
  EXPECT_EQ(r.out.size(), 3000000u);
}

TEST(ProcessTest, WatchesARunningChildAndSignalsIt) {
  SpawnOptions options;
  options.argv = {"/bin/sh", "-c", "echo ready; exec sleep 60"};
  std::string error;
  std::unique_ptr<Process> process = Process::start(options, &error);
  ASSERT_NE(process, nullptr) << error;
  EXPECT_GT(process->pid(), 0);
  ASSERT_TRUE(process->waitForStdout("ready", kGenerous));
  EXPECT_FALSE(process->waitForStdout("never", milliseconds(50)));
  EXPECT_TRUE(process->signal(SIGUSR1));
  const ProcessResult r = process->wait(kGenerous);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.term_signal, SIGUSR1);
  EXPECT_EQ(r.out, "ready\n");
}

TEST(TempDirTest, CreatesAFreshDirectoryAndRemovesItWithItsContents) {
  std::string path;
  {
    TempDir a("ncclrec-support");
    TempDir b("ncclrec-support");
    path = a.path();
    ASSERT_FALSE(path.empty());
    EXPECT_NE(a.path(), b.path());
    EXPECT_NE(path.find("ncclrec-support-"), std::string::npos);
    ASSERT_EQ(mkdir(a.file("sub").c_str(), 0700), 0);
    std::ofstream(a.file("sub/f")) << "x";
    EXPECT_EQ(readFile(a.file("sub/f")), "x");
  }
  struct stat info;
  EXPECT_NE(stat(path.c_str(), &info), 0);
}

TEST(ReadFileTest, ReadsBinaryContentAndReportsMissingFiles) {
  TempDir dir;
  const std::string content("a\0b\nc", 5);
  std::ofstream(dir.file("data"), std::ios::binary) << content;
  EXPECT_EQ(readFile(dir.file("data")), content);
  EXPECT_EQ(readFile(dir.file("missing")), std::nullopt);
  EXPECT_EQ(readFile(dir.path()), std::nullopt);  // a directory is not a readable file
}

}  // namespace
}  // namespace ncclrec::support
