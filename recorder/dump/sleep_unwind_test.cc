// Frames of a sleeping thread from its saved stack pointer and program counter (sleep_unwind.h).
#include "recorder/dump/sleep_unwind.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include "recorder/dump/symbolize.h"

namespace ncclrec::dump {
namespace {

TEST(SleepUnwindTest, ParsesTheLineOfAThreadBlockedInACall) {
  const auto call = parseBlockedCall(
      "230 0x0 0x0 0x7ffd1c2e3b40 0x7ffd1c2e3b40 0x0 0x0 0x7ffd1c2e3b28 0x7f0e5a9c4503\n");
  ASSERT_TRUE(call.has_value());
  EXPECT_EQ(call->nr, 230);
  EXPECT_EQ(call->sp, 0x7ffd1c2e3b28u);
  EXPECT_EQ(call->pc, 0x7f0e5a9c4503u);
}

TEST(SleepUnwindTest, RefusesARunningThreadAndAnythingElse) {
  EXPECT_FALSE(parseBlockedCall("running\n"));
  EXPECT_FALSE(parseBlockedCall("-1 0x7ffd1c2e3b28 0x7f0e5a9c4503\n"));  // not in a call
  EXPECT_FALSE(parseBlockedCall("230 0x0 0x0\n"));                       // cut short
  EXPECT_FALSE(parseBlockedCall("230 0x0 0x0 0x0 0x0 0x0 0x0 0x7ffd 0x7f0e extra\n"));
  EXPECT_FALSE(parseBlockedCall(""));
}

std::atomic<bool> g_stop{false};

// Kept whole and out of line: the frame the walk must reach.
__attribute__((noinline)) void sleepInNanosleep() {
  while (!g_stop.load()) {
    timespec ts{0, 20'000'000};
    nanosleep(&ts, nullptr);
  }
  asm volatile("" ::: "memory");
}

// Waits until thread `tid` sits in a system call.
bool waitBlocked(int tid) {
  for (int i = 0; i < 500; ++i) {
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
    if (FILE* f = fopen(path, "r")) {
      char line[256] = {};
      const bool got = fgets(line, sizeof(line), f) != nullptr;
      fclose(f);
      if (got && parseBlockedCall(line)) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

TEST(SleepUnwindTest, ASleepingThreadIsPlacedInTheFunctionThatSleeps) {
#ifndef NCCLREC_HAVE_LIBDW
  GTEST_SKIP() << "built without libdw: sleeping threads are not unwound";
#endif
  g_stop = false;
  std::atomic<int> tid{0};
  std::thread sleeper([&] {
    tid = static_cast<int>(syscall(SYS_gettid));
    sleepInNanosleep();
  });
  while (tid.load() == 0) std::this_thread::yield();
  // The 20 ms sleeps leave it blocked most of the time; a walk that raced a wake-up is empty.
  BlockedThreadUnwinder unwinder;
  std::vector<uint64_t> frames;
  for (int attempt = 0; attempt < 20 && frames.empty(); ++attempt) {
    ASSERT_TRUE(waitBlocked(tid));
    frames = unwinder.unwind(tid, 32);
  }
  // The session serves the next walk too (a dump's sleeping threads share it).
  ASSERT_TRUE(waitBlocked(tid));
  std::vector<uint64_t> again;
  for (int attempt = 0; attempt < 20 && again.empty(); ++attempt) again = unwinder.unwind(tid, 32);
  EXPECT_FALSE(again.empty());
  g_stop = true;
  sleeper.join();
  ASSERT_FALSE(frames.empty());
  Symbolizer symbolizer(true);
  std::string names;
  bool found = false;
  for (uint64_t address : frames) {
    const std::string name = symbolizer.symbolize(address).function;
    names += name + "\n";
    found = found || name.find("sleepInNanosleep") != std::string::npos;
  }
  EXPECT_TRUE(found) << names;
}

TEST(SleepUnwindTest, ARunningThreadGivesNoFrames) {
  std::atomic<bool> stop{false};
  std::atomic<int> tid{0};
  std::thread spinner([&] {
    tid = static_cast<int>(syscall(SYS_gettid));
    while (!stop.load()) {
    }
  });
  while (tid.load() == 0) std::this_thread::yield();
  EXPECT_TRUE(BlockedThreadUnwinder().unwind(tid, 32).empty());
  stop = true;
  spinner.join();
}

TEST(SleepUnwindTest, SixtyFourSleepingThreadsShareOneSession) {
#ifndef NCCLREC_HAVE_LIBDW
  GTEST_SKIP() << "built without libdw: sleeping threads are not unwound";
#endif
  // A dump of a process with 64 threads asleep: every one is unwound, through one session. The
  // time it takes is printed (docs/performance.md), not judged: it depends on the machine.
  g_stop = false;
  constexpr int kThreads = 64;
  std::vector<std::atomic<int>> tids(kThreads);
  std::vector<std::thread> sleepers;
  for (int i = 0; i < kThreads; ++i) {
    sleepers.emplace_back([&tids, i] {
      tids[i] = static_cast<int>(syscall(SYS_gettid));
      sleepInNanosleep();
    });
  }
  for (auto& tid : tids) {
    while (tid.load() == 0) std::this_thread::yield();
    ASSERT_TRUE(waitBlocked(tid));
  }
  BlockedThreadUnwinder unwinder;
  int unwound = 0;
  const auto start = std::chrono::steady_clock::now();
  for (auto& tid : tids) unwound += unwinder.unwind(tid, 32).empty() ? 0 : 1;
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  g_stop = true;
  for (std::thread& t : sleepers) t.join();
  printf("[ unwound  ] %d of %d sleeping threads in %.1f ms\n", unwound, kThreads, ms);
  // A thread whose 20 ms sleep ended during its walk gives no frames; most do not.
  EXPECT_GE(unwound, kThreads / 2);
}

}  // namespace
}  // namespace ncclrec::dump
