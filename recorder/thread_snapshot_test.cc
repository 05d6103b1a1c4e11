#include "recorder/thread_snapshot.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "format/bbox_ring.h"
#include "format/reader.h"
#include "format/recording_files.h"
#include "recorder/clock.h"
#include "recorder/recorder.h"
#include "recorder/stacks.h"
#include "recorder/testing/recorder_fixture.h"

// Kept out of anonymous namespaces so that dladdr names them (the test is linked with -rdynamic).
namespace ncclrec::recorder::snapshot_test {

std::atomic<bool> g_stop{false};
std::atomic<int> g_ready{0};

bool g_stop_spin = false;  // read with the builtin: no out-of-line call even at -O0
__attribute__((noinline)) void spinHere() {
  g_ready.fetch_add(1);
  while (!__atomic_load_n(&g_stop_spin, __ATOMIC_RELAXED)) asm volatile("" ::: "memory");
}
__attribute__((noinline)) void busySpinMain() {
  spinHere();
  asm volatile("" ::: "memory");
}

__attribute__((noinline)) void blockOnPipe(int fd) {
  char c;
  g_ready.fetch_add(1);
  while (read(fd, &c, 1) < 0 && errno == EINTR) {
  }
}
__attribute__((noinline)) void pipeReaderMain(int fd) {
  blockOnPipe(fd);
  asm volatile("" ::: "memory");
}

__attribute__((noinline)) void sleepHere() {
  g_ready.fetch_add(1);
  while (!g_stop.load()) usleep(20000);
}
__attribute__((noinline)) void sleeperMain() {
  sleepHere();
  asm volatile("" ::: "memory");
}

// A deadlocked pair: each holds one mutex and waits for the other's. The wait gives up only when
// the test ends (g_stop), so that no thread outlives the test (LeakSanitizer trips over threads
// left blocked at exit).
struct Pair {
  std::timed_mutex a, b;
  std::atomic<int> holding{0};
};
__attribute__((noinline)) void lockInOrder(Pair* pair, std::timed_mutex& first,
                                           std::timed_mutex& second) {
  std::lock_guard<std::timed_mutex> one(first);
  pair->holding.fetch_add(1);
  while (pair->holding.load() < 2) usleep(100);
  g_ready.fetch_add(1);
  while (!second.try_lock_for(std::chrono::milliseconds(50))) {
    if (g_stop.load()) return;
  }
  second.unlock();
}
__attribute__((noinline)) void deadlockMainAB(Pair* pair) {
  lockInOrder(pair, pair->a, pair->b);
  asm volatile("" ::: "memory");
}
__attribute__((noinline)) void deadlockMainBA(Pair* pair) {
  lockInOrder(pair, pair->b, pair->a);
  asm volatile("" ::: "memory");
}

// Waits (on a futex: a call SA_RESTART restarts) until `stop` is set.
struct Gate {
  std::mutex m;
  std::condition_variable cv;
  bool open = false;
  void wait() {
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return open; });
  }
  void release() {
    {
      std::lock_guard<std::mutex> lock(m);
      open = true;
    }
    cv.notify_all();
  }
};

__attribute__((noinline)) void blockedSignalsMain(Gate* gate) {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  g_ready.fetch_add(1);
  gate->wait();
}

namespace {

struct Box {
  explicit Box(uint32_t threads) {
    const auto g = format::computeGeometry(16, 1, 1, 1, 1, 0, 0, threads);
    bytes = g.file_bytes;
    mem = std::aligned_alloc(4096, bytes);
    std::memset(mem, 0, bytes);
    format::initHeader(header(), 16, 1, 1, 1, 1, 0, 0, threads);
  }
  ~Box() { std::free(mem); }
  format::BboxHeader* header() { return static_cast<format::BboxHeader*>(mem); }
  format::RankData read() {
    auto parsed = format::parseBlackBox(mem, bytes, "snapshot");
    EXPECT_TRUE(parsed.ok()) << parsed.status().message();
    return parsed.ok() ? std::move(parsed).value() : format::RankData{};
  }
  void* mem;
  size_t bytes;
};

std::string functionOf(const format::Frame& f) {
  Dl_info info{};
  if (f.python || dladdr(reinterpret_cast<void*>(f.address - 1), &info) == 0 ||
      info.dli_sname == nullptr)
    return "";
  return info.dli_sname;
}

// Whether one of the thread's frames is in a function whose mangled name contains `name`.
bool hasFrame(const format::ThreadState& t, const char* name) {
  for (const format::Frame& f : t.frames)
    if (functionOf(f).find(name) != std::string::npos) return true;
  return false;
}

std::string describe(const format::ThreadState& t) {
  std::string s = "tid " + std::to_string(t.tid) + " status " + std::to_string(t.status) + ":";
  for (const format::Frame& f : t.frames) s += " " + functionOf(f);
  return s;
}

const format::ThreadState* threadById(const format::RankData& d, int tid) {
  for (const format::ThreadState& t : d.threads)
    if (t.tid == tid) return &t;
  return nullptr;
}

class ThreadSnapshotTest : public ::testing::TestWithParam<UnwindMode> {
 protected:
  void SetUp() override {
#if defined(__SANITIZE_THREAD__)
    GTEST_SKIP() << "ThreadSanitizer builds take no thread snapshots (TSan defers the snapshot "
                    "signal to the thread's next interceptor; thread_snapshot.cc)";
#endif
    initUnwinder(GetParam());
    SnapshotOptions o;
    o.signal = SIGRTMAX - 3;
    o.deadline_ms = 300;
    ASSERT_TRUE(installSnapshotHandler(o));
  }
};

}  // namespace

TEST_P(ThreadSnapshotTest, EveryThreadSaysWhereItIs) {
  g_stop = false;
  __atomic_store_n(&g_stop_spin, false, __ATOMIC_RELAXED);
  g_ready = 0;
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  std::atomic<int> tids[6] = {};
  auto start = [&](int i, void (*body)()) {
    return std::thread([&, i, body] {
      tids[i] = static_cast<int>(syscall(SYS_gettid));
      body();
    });
  };
  std::vector<std::thread> threads;
  threads.push_back(start(0, busySpinMain));
  threads.push_back(std::thread([&] {
    tids[1] = static_cast<int>(syscall(SYS_gettid));
    pipeReaderMain(pipe_fds[0]);
  }));
  threads.push_back(start(2, sleeperMain));
  Gate gate;
  threads.push_back(std::thread([&] {
    tids[3] = static_cast<int>(syscall(SYS_gettid));
    blockedSignalsMain(&gate);
  }));
  auto pair = std::make_unique<Pair>();
  std::thread ab([&] {
    tids[4] = static_cast<int>(syscall(SYS_gettid));
    deadlockMainAB(pair.get());
  });
  std::thread ba([&] {
    tids[5] = static_cast<int>(syscall(SYS_gettid));
    deadlockMainBA(pair.get());
  });
  for (int i = 0; i < 10000 && g_ready.load() < 6; ++i) usleep(1000);
  ASSERT_EQ(g_ready.load(), 6);
  usleep(20000);  // into read(), nanosleep() and the futex wait

  Box box(64);
  const SnapshotResult result = takeThreadSnapshot(box.header(), 1);
  const format::RankData data = box.read();
  g_stop = true;
  __atomic_store_n(&g_stop_spin, true, __ATOMIC_RELAXED);
  gate.release();
  ASSERT_EQ(write(pipe_fds[1], "x", 1), 1);
  for (auto& t : threads) t.join();

  EXPECT_EQ(result.threads, data.threads.size());
  EXPECT_GT(data.threads_ns, 0);
  EXPECT_EQ(data.threads_dumper_tid, static_cast<int>(syscall(SYS_gettid)));
  EXPECT_GE(data.threads.size(), 7u);  // main + 6

  const format::ThreadState* spin = threadById(data, tids[0]);
  ASSERT_NE(spin, nullptr);
#if defined(__SANITIZE_THREAD__)
  // TSan defers a signal until the thread next enters one of its interceptors; a pure spin never
  // does, so it cannot answer under TSan.
  EXPECT_EQ(spin->status, format::kThreadNoAnswer) << describe(*spin);
  fprintf(stderr,
          "busy spin: not answering under ThreadSanitizer (signals deferred), as expected\n");
#else
  EXPECT_EQ(spin->status, format::kThreadAnswered);
  EXPECT_TRUE(hasFrame(*spin, "spinHere")) << describe(*spin);
  EXPECT_EQ(spin->kernel_state, 'R');
#endif

  const format::ThreadState* reader = threadById(data, tids[1]);
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(reader->status, format::kThreadAnswered);
  EXPECT_TRUE(hasFrame(*reader, "pipeReaderMain")) << describe(*reader);
  EXPECT_EQ(reader->kernel_state, 'S');

  // Inside nanosleep it is not asked: a signal would cut the sleep short (this process runs no
  // Python). On a loaded machine the snapshot may find it between two sleeps: then it answers.
  const format::ThreadState* sleeper = threadById(data, tids[2]);
  ASSERT_NE(sleeper, nullptr);
  if (sleeper->status == format::kThreadNotAsked) {
    EXPECT_NE(sleeper->flags & format::kThreadInSleepingCall, 0u);
    EXPECT_TRUE(sleeper->frames.empty());
  } else {
    EXPECT_EQ(sleeper->status, format::kThreadAnswered);
    EXPECT_TRUE(hasFrame(*sleeper, "sleeperMain")) << describe(*sleeper);
  }

  const format::ThreadState* blocked = threadById(data, tids[3]);
  ASSERT_NE(blocked, nullptr);
  EXPECT_EQ(blocked->status, format::kThreadNoAnswer);
  EXPECT_NE(blocked->flags & format::kThreadSignalBlocked, 0u);
  EXPECT_TRUE(blocked->frames.empty());
  EXPECT_NE(blocked->kernel_state, 0);

  for (int i : {4, 5}) {
    const format::ThreadState* t = threadById(data, tids[i]);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->status, format::kThreadAnswered);
    EXPECT_EQ(t->kernel_state, 'S');
    if (GetParam() == UnwindMode::kFramePointer) {
      // libc keeps no frame pointers: the walk from inside its timed lock loses the callers.
      fprintf(stderr, "deadlocked thread, frame pointers: %s\n", describe(*t).c_str());
      continue;
    }
    EXPECT_TRUE(hasFrame(*t, "lockInOrder")) << describe(*t);
    EXPECT_TRUE(hasFrame(*t, i == 4 ? "deadlockMainAB" : "deadlockMainBA")) << describe(*t);
  }

  const format::ThreadState* self = threadById(data, data.threads_dumper_tid);
  ASSERT_NE(self, nullptr);
  EXPECT_EQ(self->status, format::kThreadDumper);
  EXPECT_FALSE(self->frames.empty());
  EXPECT_FALSE(self->name.empty());

  ab.join();
  ba.join();
}

TEST_P(ThreadSnapshotTest, SixtyFourThreadsTakeLittleTime) {
  Gate gate;
  std::vector<std::thread> threads;
  for (int i = 0; i < 63; ++i) threads.emplace_back([&] { gate.wait(); });
  usleep(20000);
  Box box(128);
  int64_t best = INT64_MAX;
  SnapshotResult last;
  for (int round = 0; round < 5; ++round) {
    last = takeThreadSnapshot(box.header(), 1);
    best = std::min(best, last.elapsed_ns);
  }
  gate.release();
  for (auto& t : threads) t.join();
  EXPECT_GE(last.threads, 64u);
  EXPECT_EQ(last.answered, last.threads);
  fprintf(stderr, "snapshot of %u threads (%s): best of 5 %.2f ms, last %.2f ms\n", last.threads,
          GetParam() == UnwindMode::kFramePointer ? "frame pointers" : "libunwind", best / 1e6,
          last.elapsed_ns / 1e6);
  EXPECT_LT(best, 50 * 1000000);
}

INSTANTIATE_TEST_SUITE_P(Modes, ThreadSnapshotTest,
                         ::testing::Values(UnwindMode::kLibunwind, UnwindMode::kFramePointer),
                         [](const auto& info) {
                           return info.param == UnwindMode::kFramePointer ? "FramePointer"
                                                                          : "Libunwind";
                         });

__attribute__((noinline)) void waitInDataLoader(Gate* gate) { gate->wait(); }

// Through the recorder: a dump carries every thread, symbolized, and the black box keeps them.
class SnapshotDumpTest : public testing::RecorderTest {};

TEST_F(SnapshotDumpTest, DumpsCarryEveryThreadSymbolized) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "ThreadSanitizer builds take no thread snapshots (thread_snapshot.cc)";
#endif
  runInChild({{"NCCLREC_SNAPSHOT_SIGNAL", "SIGRTMIN+5"}}, [this] {
    Recorder* r = Recorder::get();
    ASSERT_NE(r, nullptr);
    Gate gate;
    std::atomic<int> tid{0};
    std::thread loader([&] {
      tid = static_cast<int>(syscall(SYS_gettid));
      waitInDataLoader(&gate);
    });
    while (tid.load() == 0) usleep(1000);
    usleep(10000);
    ASSERT_TRUE(r->dumpNow(format::DumpReason::kManual, "test"));
    gate.release();
    loader.join();
    const format::RankData dump = loadOnly(".manual.ncclrec.pb");
    ASSERT_FALSE(dump.threads.empty());
    EXPECT_EQ(dump.threads_reason, format::DumpReason::kManual);
    const format::ThreadState* t = threadById(dump, tid);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->status, format::kThreadAnswered);
    EXPECT_TRUE(t->symbolized);
    bool named = false;
    for (const format::Frame& f : t->frames)
      named = named || f.function.find("waitInDataLoader") != std::string::npos;
    EXPECT_TRUE(named) << describe(*t);
    const format::RankData box = loadOnly(".bbox");
    EXPECT_EQ(box.threads_ns, dump.threads_ns);
    EXPECT_EQ(box.threads.size(), dump.threads.size());
  });
}

// ncclrec-top's request (NCCLREC_DIR/ncclrec.snapshot): a fresh snapshot in the black box, no
// dump file; a request for another run is not ours.
TEST_F(SnapshotDumpTest, SnapshotRequestFillsTheBlackBoxWithoutADump) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "ThreadSanitizer builds take no thread snapshots (thread_snapshot.cc)";
#endif
  runInChild({{"NCCLREC_SNAPSHOT_SIGNAL", "SIGRTMIN+5"}, {"NCCLREC_RUN_ID", "job9"}}, [this] {
    ASSERT_NE(Recorder::get(), nullptr);
    Gate gate;
    std::atomic<int> tid{0};
    std::thread loader([&] {
      tid = static_cast<int>(syscall(SYS_gettid));
      waitInDataLoader(&gate);
    });
    while (tid.load() == 0) usleep(1000);
    const auto request = [this](const std::string& run_id) {
      format::TriggerFile t;
      t.run_id = run_id;
      t.reason = std::string(format::kSnapshotReason);
      std::string error;
      ASSERT_TRUE(t.write(dir_.file(std::string(format::kSnapshotRequestFileName)), &error))
          << error;
    };
    // Polls the black box for a snapshot for up to `seconds`.
    const auto snapshotWithin = [this](double seconds) {
      const auto deadline = std::chrono::steady_clock::now() +
                            std::chrono::milliseconds(static_cast<int>(seconds * 1000));
      do {
        const format::RankData box = loadOnly(".bbox");
        if (box.threads_ns != 0) return box;
        usleep(20000);
      } while (std::chrono::steady_clock::now() < deadline);
      return format::RankData{};
    };
    request("other-job");
    EXPECT_EQ(snapshotWithin(0.6).threads_ns, 0) << "a request for another run was taken";
    request("job9");
    const format::RankData box = snapshotWithin(2.0);
    gate.release();
    loader.join();
    ASSERT_NE(box.threads_ns, 0) << "no snapshot within 2 s of the request";
    EXPECT_EQ(box.threads_reason, format::DumpReason::kSnapshot);
    EXPECT_TRUE(filesEndingWith(".ncclrec.pb").empty()) << "a snapshot request wrote a dump";
    const format::ThreadState* t = threadById(box, tid);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->status, format::kThreadAnswered);
    EXPECT_FALSE(t->frames.empty());
  });
}

TEST(ThreadSnapshotProcTest, ReadsSignalMasks) {
  EXPECT_TRUE(detail::maskHasSignal("\t0000000000000001\n", 1));
  EXPECT_FALSE(detail::maskHasSignal("\t0000000000000001\n", 2));
  EXPECT_TRUE(detail::maskHasSignal(" fffffffe7ffbfeff\n", 61));
  EXPECT_TRUE(detail::maskHasSignal("1000000000000000", 61));
  EXPECT_FALSE(detail::maskHasSignal("0800000000000000", 61));
  EXPECT_FALSE(detail::maskHasSignal("", 3));
}

}  // namespace ncclrec::recorder::snapshot_test
