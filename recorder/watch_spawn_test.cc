#include "recorder/watch_spawn.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "format/testing/temp_dir.h"
#include "recorder/testing/recorder_fixture.h"

namespace ncclrec::recorder {
namespace {

using format::testing::TempDir;
using testing::RecorderTest;

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kNow = 1'700'000'000 * kSecond;

// An executable shell script at `path` running `body`.
void writeScript(const std::string& path, const std::string& body) {
  std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
  chmod(path.c_str(), 0755);
}

// A fake watcher: appends its arguments and its LD_PRELOAD to `log`, one line per start.
std::string fakeWatcher(const TempDir& dir, const std::string& log) {
  const std::string path = dir.file("fake-watch");
  writeScript(path, "echo \"$* preload=${LD_PRELOAD-unset}\" >> " + log);
  return path;
}

WatchSpawnConfig config(const std::string& watcher, const std::string& dir,
                        const std::string& run_id = "") {
  WatchSpawnConfig c;
  c.watcher = watcher;
  c.dir = dir;
  c.run_id = run_id;
  return c;
}

std::vector<std::string> linesOf(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Waits up to 5 s for `path` to hold `n` lines.
std::vector<std::string> waitForLines(const std::string& path, size_t n) {
  for (int i = 0; i < 250 && linesOf(path).size() < n; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return linesOf(path);
}

// Polls (fake clock fixed) for up to 5 s of real time until the spawner starts the watcher: a
// start waits for the previous first process to be reaped.
bool pollUntilStarted(WatchSpawner& s, int64_t now_ns, int64_t oldest_ns) {
  for (int i = 0; i < 250; ++i) {
    if (s.poll(now_ns, oldest_ns)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

TEST(WatchSpawn, AutoFindsTheWatcherBesideTheLibraryThenOnPath) {
  TempDir dir;
  std::filesystem::create_directories(dir.file("lib"));
  std::filesystem::create_directories(dir.file("bin"));
  std::filesystem::create_directories(dir.file("path"));
  const char* old_path = getenv("PATH");
  const std::string saved = old_path != nullptr ? old_path : "";
  setenv("PATH", (dir.file("nowhere") + ":" + dir.file("path")).c_str(), 1);
  std::string why;
  EXPECT_EQ(resolveWatcher("auto", dir.file("lib"), &why), "");
  EXPECT_NE(why.find("ncclrec-watch is neither in " + dir.file("lib") + "/../bin nor on PATH"),
            std::string::npos)
      << why;
  writeScript(dir.file("path/ncclrec-watch"), "exit 0");
  EXPECT_EQ(resolveWatcher("auto", dir.file("lib"), &why), dir.file("path/ncclrec-watch"));
  writeScript(dir.file("bin/ncclrec-watch"), "exit 0");
  EXPECT_EQ(resolveWatcher("auto", dir.file("lib"), &why), dir.file("lib/../bin/ncclrec-watch"));
  setenv("PATH", saved.c_str(), 1);
  why.clear();
  EXPECT_EQ(resolveWatcher("off", dir.file("lib"), &why), "");
  EXPECT_EQ(why, "");  // asked to be off: nothing to say
  std::ofstream(dir.file("plain")) << "not a program";
  EXPECT_EQ(resolveWatcher(dir.file("plain"), "", &why), "");
  EXPECT_EQ(why, "NCCLREC_WATCHER=" + dir.file("plain") + " is not an executable program");
  EXPECT_EQ(resolveWatcher(dir.file("bin/ncclrec-watch"), "", &why), dir.file("bin/ncclrec-watch"));
}

TEST(WatchSpawn, StartsOnceWhenTheOldestOpStallsThenAtMostEveryTenSeconds) {
  TempDir dir;
  const std::string log = dir.file("starts.log");
  setenv("LD_PRELOAD", "/nonexistent/libncclrec.so", 1);
  WatchSpawner s;
  std::string why;
  ASSERT_TRUE(s.init(config(fakeWatcher(dir, log), dir.path(), "r1"), &why)) << why;
  unsetenv("LD_PRELOAD");
  EXPECT_FALSE(s.poll(kNow, 0));                   // nothing incomplete
  EXPECT_FALSE(s.poll(kNow, kNow - kSecond / 2));  // younger than a second
  EXPECT_TRUE(s.poll(kNow, kNow - kSecond - 1));   // stalled: start
  auto lines = waitForLines(log, 1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "--daemonize --dir " + dir.path() + " --run-id r1 preload=unset");
  EXPECT_FALSE(s.poll(kNow + 5 * kSecond, kNow - kSecond));  // started 5 s ago
  // 10 s later, still stalled: starts again once the first process has exited (it may still be
  // exiting after writing its line; no second start while it runs).
  EXPECT_TRUE(pollUntilStarted(s, kNow + 11 * kSecond, kNow - kSecond));
  EXPECT_EQ(waitForLines(log, 2).size(), 2u);
  EXPECT_EQ(s.started(), 2);
  EXPECT_STREQ(s.failure(), "");
  EXPECT_TRUE(std::filesystem::exists(dir.file(std::string(kWatchLockName))));
}

TEST(WatchSpawn, NoStartWhileAWatcherHoldsTheLock) {
  TempDir dir;
  const std::string log = dir.file("starts.log");
  WatchSpawner s;
  std::string why;
  ASSERT_TRUE(s.init(config(fakeWatcher(dir, log), dir.path()), &why)) << why;
  const int held = open(dir.file(std::string(kWatchLockName)).c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(held, 0);
  ASSERT_EQ(flock(held, LOCK_EX | LOCK_NB), 0);
  EXPECT_FALSE(s.poll(kNow, kNow - 2 * kSecond));
  EXPECT_EQ(s.started(), 0);
  flock(held, LOCK_UN);
  close(held);
  EXPECT_TRUE(s.poll(kNow, kNow - 2 * kSecond));
  auto lines = waitForLines(log, 1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "--daemonize --dir " + dir.path() + " preload=unset");  // no run id
}

TEST(WatchSpawn, OffStartsNothing) {
  TempDir dir;
  WatchSpawner s;
  std::string why;
  EXPECT_FALSE(s.init(config("off", dir.path()), &why));
  EXPECT_EQ(why, "");
  EXPECT_FALSE(s.enabled());
  EXPECT_FALSE(s.poll(kNow, kNow - 100 * kSecond));
  EXPECT_FALSE(std::filesystem::exists(dir.file(std::string(kWatchLockName))));
}

TEST(WatchSpawn, AWatcherThatFailsTurnsLiveDetectionOffOnce) {
  TempDir dir;
  const std::string program = dir.file("broken-watch");
  writeScript(program, "exit 3");
  WatchSpawner s;
  std::string why;
  ASSERT_TRUE(s.init(config(program, dir.path()), &why)) << why;
  ASSERT_TRUE(s.poll(kNow, kNow - 2 * kSecond));
  // Reaped at a later poll: the failure is said, and nothing else is started.
  for (int i = 0; i < 250 && s.enabled(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    s.poll(kNow + i * kSecond, kNow - 2 * kSecond);
  }
  EXPECT_FALSE(s.enabled());
  EXPECT_EQ(std::string(s.failure()), program + " exited with status 3");
  EXPECT_FALSE(s.poll(kNow + 1000 * kSecond, kNow - 2 * kSecond));
  EXPECT_EQ(s.started(), 1);
}

// The watchdog of a recording process starts the watcher on its own stall, with its directory and
// run id, once.
TEST_F(RecorderTest, TheWatchdogStartsTheWatcherOnAStall) {
  TempDir scripts;
  const std::string log = scripts.file("starts.log");
  const std::string program = fakeWatcher(scripts, log);
  runInChild({{"NCCLREC_WATCHER", program}, {"NCCLREC_RUN_ID", "runA"}, {"NCCLREC_POLL_MS", "20"}},
             [&] {
               Recorder* r = Recorder::get();
               ASSERT_NE(r, nullptr);
               int comm = 0;
               testing::registerComm(r, &comm, 7, 0, 2);
               CallHandle done = testing::beginOp(r, format::OpType::kAllReduce, &comm, 1);
               r->end(done, 0);
               CallHandle pending = testing::beginOp(r, format::OpType::kAllReduce, &comm, 2);
               std::this_thread::sleep_for(std::chrono::milliseconds(700));
               EXPECT_TRUE(linesOf(log).empty()) << "started before a second of stall";
               const auto lines = waitForLines(log, 1);
               ASSERT_EQ(lines.size(), 1u);
               EXPECT_EQ(lines[0],
                         "--daemonize --dir " + dir_.path() + " --run-id runA" + " preload=unset");
               std::this_thread::sleep_for(std::chrono::milliseconds(500));
               EXPECT_EQ(linesOf(log).size(), 1u);  // once, not at every poll
               r->end(pending, 0);
             });
}

// A watcher that cannot be had is said once on stderr, and the process records on.
TEST_F(RecorderTest, AWatcherThatCannotBeFoundIsSaidOnce) {
  TempDir scripts;
  const std::string err_path = scripts.file("stderr");
  const std::string missing = scripts.file("no-such-watch");
  runInChild({{"NCCLREC_WATCHER", missing}, {"NCCLREC_POLL_MS", "20"}}, [&] {
    const int fd = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ASSERT_GE(fd, 0);
    const int saved = dup(2);
    dup2(fd, 2);
    Recorder* r = Recorder::get();
    ASSERT_NE(r, nullptr);
    int comm = 0;
    testing::registerComm(r, &comm, 7, 0, 2);
    CallHandle pending = testing::beginOp(r, format::OpType::kAllReduce, &comm, 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(1300));
    r->end(pending, 0);
    dup2(saved, 2);
    const std::vector<std::string> lines = linesOf(err_path);
    ASSERT_EQ(lines.size(), 1u) << (lines.empty() ? "" : lines[1]);
    EXPECT_NE(lines[0].find("WARN live detection off: NCCLREC_WATCHER=" + missing +
                            " is not an executable program; hangs are declared after "
                            "NCCLREC_TIMEOUT"),
              std::string::npos)
        << lines[0];
  });
}

}  // namespace
}  // namespace ncclrec::recorder
