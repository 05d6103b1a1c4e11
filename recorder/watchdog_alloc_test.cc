// The watchdog's steady state allocates nothing. A fork() in any thread of the host copies the
// allocator's locks as they are; a poll caught inside operator new would leave a sanitized child
// (ASan's allocator takes no fork locks) deadlocked at its next allocation or at exit. This
// binary replaces the global operator new to count the allocations made on the watchdog thread.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <thread>

#include "recorder/testing/recorder_fixture.h"

namespace {

std::atomic<int> g_watchdog_allocations{0};

bool onWatchdogThread() {
  char name[16] = {};
  if (pthread_getname_np(pthread_self(), name, sizeof(name)) != 0) return false;
  return std::strcmp(name, "ncclrec-watch") == 0;
}

void* counted(std::size_t size) {
  if (onWatchdogThread()) g_watchdog_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}

}  // namespace

void* operator new(std::size_t size) { return counted(size); }
void* operator new[](std::size_t size) { return counted(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace ncclrec::recorder {
namespace {

using format::OpType;
using testing::beginOp;
using testing::RecorderTest;
using testing::registerComm;

TEST_F(RecorderTest, WatchdogPollsWithoutAllocating) {
  runInChild({{"NCCLREC_POLL_MS", "1"}, {"NCCLREC_TIMEOUT", "60"}}, [] {
    Recorder* r = Recorder::get();
    ASSERT_NE(r, nullptr);
    int comm = 0;
    registerComm(r, &comm, 7, 0, 2);
    // Let the thread start and settle, then count over a few hundred polls with completed ops,
    // an op in flight (younger than the timeout) and no trigger file.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    g_watchdog_allocations.store(0);
    for (int i = 0; i < 100; ++i) {
      CallHandle c = beginOp(r, OpType::kAllReduce, &comm, i);
      r->end(c, 0);
    }
    CallHandle pending = beginOp(r, OpType::kAllReduce, &comm, 100);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_EQ(g_watchdog_allocations.load(), 0) << "allocations on the watchdog thread";
    r->end(pending, 0);
  });
}

// Starting the live watcher on a stall (watch_spawn.h) allocates nothing either: its argv and
// environment were built at start.
TEST_F(RecorderTest, WatchdogStartsTheWatcherWithoutAllocating) {
  runInChild(
      {{"NCCLREC_POLL_MS", "5"}, {"NCCLREC_TIMEOUT", "60"}, {"NCCLREC_WATCHER", "/bin/true"}}, [] {
        Recorder* r = Recorder::get();
        ASSERT_NE(r, nullptr);
        int comm = 0;
        registerComm(r, &comm, 7, 0, 2);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        g_watchdog_allocations.store(0);
        CallHandle pending = beginOp(r, OpType::kAllReduce, &comm, 1);
        // Past the one-second stall: the watcher is started, then reaped.
        std::this_thread::sleep_for(std::chrono::milliseconds(1400));
        EXPECT_EQ(g_watchdog_allocations.load(), 0) << "allocations on the watchdog thread";
        r->end(pending, 0);
      });
}

}  // namespace
}  // namespace ncclrec::recorder
