#include "base/proc_state.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "gtest/gtest.h"

namespace ncclrec::base {
namespace {

TEST(ProcStateTest, ParsesStat) {
  char state = 0;
  uint64_t ticks = 0;
  ASSERT_TRUE(parseTaskStat(
      "123 (a (weird) name) S 1 2 3 0 -1 4194560 100 0 0 0 17 25 0 0 20 0 1 0", &state, &ticks));
  EXPECT_EQ(state, 'S');
  EXPECT_EQ(ticks, 42u);
  EXPECT_FALSE(parseTaskStat("123 (x", &state, &ticks));
  EXPECT_FALSE(parseTaskStat("123 (x) R 1 2", &state, &ticks));
}

TEST(ProcStateTest, NamesEachStateBothWays) {
  for (char c : std::string("RSDTtZXI")) {
    EXPECT_FALSE(processStateName(c).empty()) << c;
    EXPECT_EQ(processStateLetter(processStateName(c)), c);
  }
  EXPECT_EQ(processStateName('?'), "");
  EXPECT_EQ(processStateLetter("frozen"), 0);
  EXPECT_TRUE(notRunning('T') && notRunning('t') && notRunning('D'));
  EXPECT_FALSE(notRunning('R') || notRunning('S') || notRunning('Z') || notRunning(0));
  EXPECT_TRUE(stoppedForGood('T') && stoppedForGood('t') && stoppedForGood('Z'));
  EXPECT_FALSE(stoppedForGood('D') || stoppedForGood('S') || stoppedForGood(0));
}

TEST(ProcStateTest, ReadsThisProcess) {
  const auto s = readProcessState(getpid());
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->state, 'R');  // the main thread reads its own stat
  EXPECT_GE(s->threads, 1);
  EXPECT_FALSE(readProcessState(0).has_value());
  EXPECT_FALSE(readProcessState(getpid(), "/nonexistent").has_value());
}

// Polls until the child's state is `want` (the kernel applies a stop asynchronously).
char waitForState(pid_t pid, char want) {
  char last = 0;
  for (int i = 0; i < 500 && last != want; ++i) {
    if (const auto s = readProcessState(pid)) last = s->state;
    if (last != want) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return last;
}

TEST(ProcStateTest, SeesAStoppedProcessAndItsWaitChannel) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    for (;;) pause();
  }
  EXPECT_EQ(waitForState(child, 'S'), 'S');
  kill(child, SIGSTOP);
  EXPECT_EQ(waitForState(child, 'T'), 'T');
  const auto s = readProcessState(child);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(processStateName(s->state), "stopped");
  EXPECT_TRUE(notRunning(s->state));
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_FALSE(readProcessState(child).has_value());
}

// A /proc of the test's own: every thread stopped makes the process stopped; one stopped thread
// of several does not.
TEST(ProcStateTest, AProcessIsStoppedWhenEveryThreadIs) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("proc_state_test." + std::to_string(getpid()));
  fs::remove_all(root);
  const auto task = [&](const std::string& tid, char state) {
    fs::create_directories(root / "42" / "task" / tid);
    std::ofstream(root / "42" / "task" / tid / "stat")
        << tid << " (w) " << state << " 1 2 3 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0\n";
  };
  std::ofstream((fs::create_directories(root / "42"), root / "42" / "stat"))
      << "42 (w) S 1 2 3 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0\n";
  std::ofstream(root / "42" / "wchan") << "do_signal_stop";
  task("42", 'T');
  task("43", 'T');
  auto s = readProcessState(42, root.string());
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->state, 'T');
  EXPECT_EQ(s->wchan, "do_signal_stop");
  EXPECT_EQ(s->threads, 2);
  task("43", 'R');
  s = readProcessState(42, root.string());
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->state, 'S');  // the main thread's own letter
  fs::remove_all(root);
}

}  // namespace
}  // namespace ncclrec::base
