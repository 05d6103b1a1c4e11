#include "recorder/cuda_completion.h"

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "recorder/cuda_test_fixture.h"

namespace ncclrec::recorder {
namespace {

TEST_F(CudaCompletionTest, CreateFailsWithoutTheLibrary) {
  std::string why;
  EXPECT_EQ(CudaCompletion::create(16, "/nonexistent/libcuda.so.1", &why), nullptr);
  EXPECT_NE(why.find("cannot load the CUDA driver"), std::string::npos) << why;
  EXPECT_NE(why.find("/nonexistent/libcuda.so.1"), std::string::npos) << why;
}

TEST_F(CudaCompletionTest, CreateFailsWithoutEntryPoints) {
  std::string why;
  EXPECT_EQ(CudaCompletion::create(16, "libc.so.6", &why), nullptr);
  EXPECT_NE(why.find("does not export cuInit"), std::string::npos) << why;
}

TEST_F(CudaCompletionTest, CreateFailsWhenCuInitFails) {
  setenv("FAKE_CUDA_FAIL_INIT", "1", 1);
  std::string why;
  EXPECT_EQ(CudaCompletion::create(16, NCCLREC_TEST_FAKE_CUDA, &why), nullptr);
  unsetenv("FAKE_CUDA_FAIL_INIT");
  EXPECT_NE(why.find("cuInit(0) failed: CUDA_ERROR_NO_DEVICE (100)"), std::string::npos) << why;
}

// The CUDA toolkit's stub libcuda exports the real driver's names and ABI but has no driver
// behind it: every entry point we need must resolve there, and cuInit must fail cleanly.
TEST_F(CudaCompletionTest, RealDriverExportsEveryEntryPoint) {
#ifdef NCCLREC_TEST_CUDA_STUB
  std::string why;
  EXPECT_EQ(CudaCompletion::create(16, NCCLREC_TEST_CUDA_STUB, &why), nullptr);
  EXPECT_EQ(why.rfind("cuInit(0) failed: ", 0), 0u) << why;
#else
  GTEST_SKIP() << "no CUDA toolkit stub libcuda found at configure time";
#endif
}

TEST_F(CudaCompletionTest, CreateRejectsPoolSizeNotPowerOfTwo) {
  std::string why;
  EXPECT_EQ(CudaCompletion::create(12, NCCLREC_TEST_FAKE_CUDA, &why), nullptr);
  EXPECT_NE(why.find("power of two"), std::string::npos) << why;
  EXPECT_EQ(CudaCompletion::create(0, NCCLREC_TEST_FAKE_CUDA, &why), nullptr);
}

TEST_F(CudaCompletionTest, LibraryComesFromTheEnvironment) {
  std::string why;
  setenv(CudaCompletion::kLibraryEnv, "/nonexistent/libcuda-from-env.so", 1);
  EXPECT_EQ(CudaCompletion::create(16, &why), nullptr);
  EXPECT_NE(why.find("libcuda-from-env.so"), std::string::npos) << why;
  setenv(CudaCompletion::kLibraryEnv, NCCLREC_TEST_FAKE_CUDA, 1);
  EXPECT_NE(CudaCompletion::create(16, &why), nullptr) << why;
  unsetenv(CudaCompletion::kLibraryEnv);
}

TEST_F(CudaCompletionTest, UnblockedStreamGoesStartedThenCompleted) {
  auto cc = make(16);
  ASSERT_NE(cc, nullptr);
  int32_t ticket = cc->beforeCall(stream(1));
  ASSERT_GE(ticket, 0);
  EXPECT_TRUE(cc->afterCall(ticket, stream(1), 7, true));
  RecordingSink sink;
  EXPECT_EQ(cc->poll(sink), 0u);
  ASSERT_EQ(sink.ops.size(), 1u);
  EXPECT_EQ(sink.ops[7].started, 1);
  EXPECT_EQ(sink.ops[7].completed, 1);
  EXPECT_TRUE(sink.ops[7].started_before_completed);
  EXPECT_EQ(cc->poll(sink), 0u);
  EXPECT_EQ(sink.ops[7].completed, 1);
  EXPECT_EQ(fake_.stats().timing_events, 0u);
}

TEST_F(CudaCompletionTest, BlockedStreamKeepsOpEnqueuedUntilReleased) {
  auto cc = make(16);
  ASSERT_NE(cc, nullptr);
  fake_.setStreamBlocked(stream(1), 1);
  int32_t ticket = cc->beforeCall(stream(1));
  ASSERT_GE(ticket, 0);
  ASSERT_TRUE(cc->afterCall(ticket, stream(1), 3, true));
  RecordingSink sink;
  EXPECT_EQ(cc->poll(sink), 1u);
  EXPECT_EQ(cc->poll(sink), 1u);
  EXPECT_TRUE(sink.ops.empty());
  fake_.setStreamBlocked(stream(1), 0);
  EXPECT_EQ(cc->poll(sink), 0u);
  EXPECT_EQ(sink.ops[3].started, 1);
  EXPECT_EQ(sink.ops[3].completed, 1);
}

TEST_F(CudaCompletionTest, HungKernelIsStartedButNotCompleted) {
  auto cc = make(16);
  ASSERT_NE(cc, nullptr);
  int32_t ticket = cc->beforeCall(stream(1));
  ASSERT_GE(ticket, 0);
  // The stream reached the op (start marker done) and the op's kernel never finishes.
  fake_.setStreamBlocked(stream(1), 1);
  ASSERT_TRUE(cc->afterCall(ticket, stream(1), 5, true));
  RecordingSink sink;
  EXPECT_EQ(cc->poll(sink), 1u);
  EXPECT_EQ(sink.ops[5].started, 1);
  EXPECT_EQ(sink.ops[5].completed, 0);
  EXPECT_EQ(cc->poll(sink), 1u);
  EXPECT_EQ(sink.ops[5].started, 1) << "started reported twice";
  fake_.setStreamBlocked(stream(1), 0);
  EXPECT_EQ(cc->poll(sink), 0u);
  EXPECT_EQ(sink.ops[5].started, 1);
  EXPECT_EQ(sink.ops[5].completed, 1);
}

TEST_F(CudaCompletionTest, StreamsCompleteIndependently) {
  auto cc = make(16);
  ASSERT_NE(cc, nullptr);
  fake_.setStreamBlocked(stream(1), 1);
  int32_t a = cc->beforeCall(stream(1));
  ASSERT_GE(a, 0);
  ASSERT_TRUE(cc->afterCall(a, stream(1), 1, true));
  int32_t b = cc->beforeCall(stream(2));
  ASSERT_GE(b, 0);
  ASSERT_TRUE(cc->afterCall(b, stream(2), 2, true));
  RecordingSink sink;
  EXPECT_EQ(cc->poll(sink), 1u);
  EXPECT_EQ(sink.ops.count(1), 0u);
  EXPECT_EQ(sink.ops[2].completed, 1);
  fake_.setStreamBlocked(stream(1), 0);
  EXPECT_EQ(cc->poll(sink), 0u);
  EXPECT_EQ(sink.ops[1].completed, 1);
}

TEST_F(CudaCompletionTest, DefaultStreamsUseTheCurrentContext) {
  auto cc = make(16);
  ASSERT_NE(cc, nullptr);
  RecordingSink sink;
  for (uintptr_t s = 0; s <= 2; ++s) {
    int32_t ticket = cc->beforeCall(reinterpret_cast<void*>(s));
    ASSERT_GE(ticket, 0) << "stream " << s;
    ASSERT_TRUE(cc->afterCall(ticket, reinterpret_cast<void*>(s), 10 + s, true));
  }
  EXPECT_EQ(cc->poll(sink), 0u);
  EXPECT_EQ(sink.ops.size(), 3u);
  fake_.setCurrentContext(nullptr);
  EXPECT_EQ(cc->beforeCall(nullptr), -1);
}

TEST_F(CudaCompletionTest, StreamWithoutContextFallsBack) {
  auto cc = make(16);
  ASSERT_NE(cc, nullptr);
  fake_.setStreamContext(stream(1), nullptr);
  EXPECT_EQ(cc->beforeCall(stream(1)), -1);
  EXPECT_EQ(fake_.stats().records, 0u);
}

TEST_F(CudaCompletionTest, PoolExhaustionReturnsMinusOne) {
  auto cc = make(4);
  ASSERT_NE(cc, nullptr);
  fake_.setStreamBlocked(stream(1), 1);
  std::vector<int32_t> tickets;
  for (int i = 0; i < 4; ++i) {
    tickets.push_back(cc->beforeCall(stream(1)));
    ASSERT_GE(tickets.back(), 0);
  }
  EXPECT_EQ(cc->beforeCall(stream(1)), -1);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(cc->afterCall(tickets[i], stream(1), i, true));
  RecordingSink sink;
  EXPECT_EQ(cc->poll(sink), 4u);
  EXPECT_EQ(cc->beforeCall(stream(1)), -1) << "pending ops still hold their slots";
  fake_.setStreamBlocked(stream(1), 0);
  EXPECT_EQ(cc->poll(sink), 0u);
  EXPECT_GE(cc->beforeCall(stream(1)), 0);
}

TEST_F(CudaCompletionTest, FailedCallReleasesTheTicket) {
  auto cc = make(1);
  ASSERT_NE(cc, nullptr);
  int32_t ticket = cc->beforeCall(stream(1));
  ASSERT_GE(ticket, 0);
  EXPECT_EQ(cc->beforeCall(stream(1)), -1);
  EXPECT_FALSE(cc->afterCall(ticket, stream(1), 9, false));
  RecordingSink sink;
  EXPECT_EQ(cc->poll(sink), 0u);
  EXPECT_TRUE(sink.ops.empty());
  EXPECT_EQ(cc->beforeCall(stream(1)), ticket);
  EXPECT_FALSE(cc->afterCall(-1, stream(1), 9, true));
  EXPECT_FALSE(cc->afterCall(1, stream(1), 9, true));
}

TEST_F(CudaCompletionTest, SlotsReuseTheirEvents) {
  auto cc = make(2);
  ASSERT_NE(cc, nullptr);
  RecordingSink sink;
  for (uint64_t i = 0; i < 100; ++i) {
    int32_t ticket = cc->beforeCall(stream(1));
    ASSERT_GE(ticket, 0);
    ASSERT_TRUE(cc->afterCall(ticket, stream(1), i, true));
    cc->poll(sink);
  }
  EXPECT_EQ(sink.ops.size(), 100u);
  EXPECT_EQ(fake_.stats().created, 2u);
  cc.reset();
  EXPECT_EQ(fake_.stats().live, 0u) << "the destructor destroys pooled events";
}

TEST_F(CudaCompletionTest, EventsFollowTheStreamsContext) {
  auto cc = make(1);
  ASSERT_NE(cc, nullptr);
  static int ctx_a, ctx_b;
  fake_.setStreamContext(stream(1), &ctx_a);
  fake_.setStreamContext(stream(2), &ctx_b);
  RecordingSink sink;
  // One slot, so the second op must recreate its events in the other context; the fake rejects
  // a record of an event of another context. The thread's current context is neither.
  for (uint64_t i = 0; i < 4; ++i) {
    void* s = stream(1 + i % 2);
    int32_t ticket = cc->beforeCall(s);
    ASSERT_GE(ticket, 0) << i;
    ASSERT_TRUE(cc->afterCall(ticket, s, i, true));
    EXPECT_EQ(cc->poll(sink), 0u);
  }
  EXPECT_EQ(sink.ops.size(), 4u);
  FakeCudaStats stats = fake_.stats();
  EXPECT_EQ(stats.created, 8u);
  EXPECT_EQ(stats.live, 2u);
  EXPECT_EQ(stats.timing_events, 0u);
  // The push/pop around event creation left the thread's context as it was.
  void* current = nullptr;
  ASSERT_EQ(fake_.ctxGetCurrent(&current), 0);
  EXPECT_EQ(current, fake_.defaultContext());
}

TEST_F(CudaCompletionTest, FreeSlotsAreKeptPerContext) {
  auto cc = make(8);
  ASSERT_NE(cc, nullptr);
  static int ctx_a, ctx_b;
  fake_.setStreamContext(stream(1), &ctx_a);
  fake_.setStreamContext(stream(2), &ctx_b);
  RecordingSink sink;
  for (uint64_t i = 0; i < 200; ++i) {
    void* s = stream(1 + i % 2);
    int32_t ticket = cc->beforeCall(s);
    ASSERT_GE(ticket, 0);
    ASSERT_TRUE(cc->afterCall(ticket, s, i, true));
    cc->poll(sink);
  }
  EXPECT_EQ(sink.ops.size(), 200u);
  EXPECT_EQ(fake_.stats().created, 4u) << "alternating contexts recreated events";
}

TEST_F(CudaCompletionTest, DriverErrorOnRecordFallsBack) {
  auto cc = make(2);
  ASSERT_NE(cc, nullptr);
  fake_.failEventRecords(1);
  EXPECT_EQ(cc->beforeCall(stream(1)), -1);
  int32_t ticket = cc->beforeCall(stream(1));
  ASSERT_GE(ticket, 0);
  fake_.failEventRecords(1);
  EXPECT_FALSE(cc->afterCall(ticket, stream(1), 1, true));
  RecordingSink sink;
  EXPECT_EQ(cc->poll(sink), 0u);
  EXPECT_TRUE(sink.ops.empty());
  // Both slots are free again.
  int32_t a = cc->beforeCall(stream(1));
  int32_t b = cc->beforeCall(stream(1));
  EXPECT_GE(a, 0);
  EXPECT_GE(b, 0);
}

TEST_F(CudaCompletionTest, QueryErrorReportsLostAndRecyclesTheSlot) {
  auto cc = make(1);
  ASSERT_NE(cc, nullptr);
  fake_.setStreamBlocked(stream(1), 1);
  int32_t ticket = cc->beforeCall(stream(1));
  ASSERT_GE(ticket, 0);
  ASSERT_TRUE(cc->afterCall(ticket, stream(1), 4, true));
  fake_.setQueryError(700);
  RecordingSink sink;
  EXPECT_EQ(cc->poll(sink), 0u);
  EXPECT_EQ(sink.ops[4].lost, 1);
  EXPECT_EQ(sink.ops[4].completed, 0);
  EXPECT_EQ(sink.last_lost_result, 700);
  fake_.setQueryError(0);
  EXPECT_GE(cc->beforeCall(stream(1)), 0);
}

TEST_F(CudaCompletionTest, QueryRetriesInTheEventsContext) {
  auto cc = make(4);
  ASSERT_NE(cc, nullptr);
  int32_t ticket = cc->beforeCall(stream(1));
  ASSERT_GE(ticket, 0);
  ASSERT_TRUE(cc->afterCall(ticket, stream(1), 2, true));
  fake_.setQueryNeedsContext(1);
  RecordingSink sink;
  std::thread watchdog([&] {
    fake_.setCurrentContext(nullptr);
    EXPECT_EQ(cc->poll(sink), 0u);
    EXPECT_EQ(fake_.threadCaptureMode(), 2) << "watchdog thread not in relaxed capture mode";
  });
  watchdog.join();
  EXPECT_EQ(sink.ops[2].completed, 1);
  EXPECT_EQ(sink.ops[2].lost, 0);
}

// Tickets claimed and released at a high rate from several threads: a ticket is never held by
// two threads at once (the free lists' ABA guard).
TEST_F(CudaCompletionTest, TicketsAreNeverSharedUnderContention) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 50000;
  auto cc = make(4);
  ASSERT_NE(cc, nullptr);
  std::atomic<int> owners[4] = {};
  std::atomic<int> shared{0};
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRounds; ++i) {
        int32_t ticket = cc->beforeCall(stream(t));
        if (ticket < 0) continue;
        if (owners[ticket].exchange(1) != 0) shared.fetch_add(1);
        owners[ticket].store(0);
        cc->afterCall(ticket, stream(t), 0, false);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(shared.load(), 0);
}

// Producers race each other for slots and the poller for recycled ones; every op must be
// reported started once and completed once, started first.
TEST_F(CudaCompletionTest, ConcurrentProducersAndPollerLoseNothing) {
  constexpr int kThreads = 4;
  constexpr uint64_t kOps = 10000;
  auto cc = make(64);
  ASSERT_NE(cc, nullptr);
  std::atomic<int> producers_left{kThreads};
  std::atomic<uint64_t> fallbacks{0};
  RecordingSink sink;
  std::thread poller([&] {
    while (producers_left.load() > 0 || cc->poll(sink) > 0) {
      cc->poll(sink);
      std::this_thread::yield();
    }
  });
  std::vector<std::thread> producers;
  producers.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    producers.emplace_back([&, t] {
      void* s = stream(100 + t);
      for (uint64_t k = 0; k < kOps; ++k) {
        // Stall the stream now and then so that ops pile up pending.
        if (k % 100 == 0) fake_.setStreamBlocked(s, 1);
        if (k % 100 == 50) fake_.setStreamBlocked(s, 0);
        int32_t ticket;
        while ((ticket = cc->beforeCall(s)) < 0) {
          // Pool exhausted: let this stream drain so the poller can recycle its slots.
          fallbacks.fetch_add(1);
          fake_.setStreamBlocked(s, 0);
          std::this_thread::yield();
        }
        const uint64_t index = uint64_t(t) * kOps + k;
        // Every 97th call "fails" and must release its ticket without a report.
        const bool ok = index % 97 != 0;
        EXPECT_EQ(cc->afterCall(ticket, s, index, ok), ok);
      }
      fake_.setStreamBlocked(s, 0);
      producers_left.fetch_sub(1);
    });
  }
  for (auto& p : producers) p.join();
  poller.join();
  EXPECT_EQ(cc->poll(sink), 0u);

  size_t expected = 0;
  for (uint64_t index = 0; index < kThreads * kOps; ++index) {
    auto it = sink.ops.find(index);
    if (index % 97 == 0) {
      EXPECT_EQ(it, sink.ops.end()) << "failed call " << index << " was reported";
      continue;
    }
    ++expected;
    ASSERT_NE(it, sink.ops.end()) << "op " << index << " never completed";
    EXPECT_EQ(it->second.started, 1) << index;
    EXPECT_EQ(it->second.completed, 1) << index;
    EXPECT_TRUE(it->second.started_before_completed) << index;
  }
  EXPECT_EQ(sink.ops.size(), expected);
  RecordProperty("pool_exhausted_retries", std::to_string(fallbacks.load()));
}

}  // namespace
}  // namespace ncclrec::recorder
