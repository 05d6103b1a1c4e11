// CUDA markers at one driver call per op (cuda_completion.h, stream_contexts.h): the end marker
// only, each stream's context remembered and re-resolved when the driver refuses it, "started"
// inferred from the stream's previous op, graph capture seen by the watchdog. The fake driver
// counts the calls.
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "recorder/cuda_completion.h"
#include "recorder/cuda_test_fixture.h"
#include "recorder/stream_contexts.h"

namespace ncclrec::recorder {
namespace {

using Markers = CudaCompletion::Markers;

class CudaMarkersTest : public CudaCompletionTest {
 protected:
  // One op through the record path; the driver calls this thread made for it.
  uint64_t recordOp(CudaCompletion& cc, void* s, uint64_t index, bool* tracked = nullptr) {
    fake_.resetThreadCalls();
    const int32_t ticket = cc.beforeCall(s);
    const bool ok = ticket >= 0 && cc.afterCall(ticket, s, index, true);
    if (tracked != nullptr) *tracked = ok;
    return fake_.threadCalls();
  }
};

TEST_F(CudaMarkersTest, OneDriverCallPerOpInSteadyState) {
  for (const Markers markers : {Markers::kEnd, Markers::kStartAndEnd}) {
    fake_.reset();
    auto cc = make(64, markers);
    ASSERT_NE(cc, nullptr);
    const uint64_t want = markers == Markers::kEnd ? 1 : 2;
    RecordingSink sink;
    // Warm-up: each stream's context is asked once, each slot's events created once.
    for (void* s : {stream(1), stream(2), static_cast<void*>(nullptr)}) {
      bool tracked = false;
      EXPECT_GT(recordOp(*cc, s, 0, &tracked), want);
      EXPECT_TRUE(tracked);
      cc->poll(sink);
    }
    const long long ctx_queries = fake_.callCount("cuStreamGetCtx");
    // Up to 16 ops pending at a time, on three streams; the first pass also creates the events of
    // the slots it reaches (once per slot), the second is the steady state.
    constexpr uint64_t kOps = 3000;
    uint64_t calls = 0;
    for (int pass = 0; pass < 2; ++pass) {
      const long long records = fake_.callCount("cuEventRecord");
      calls = 0;
      for (uint64_t i = 0; i < kOps; ++i) {
        bool tracked = false;
        void* s = i % 3 == 2 ? nullptr : stream(1 + i % 3);
        calls += recordOp(*cc, s, i, &tracked);
        ASSERT_TRUE(tracked) << i;
        if (i % 16 == 15) cc->poll(sink);  // the watchdog's calls are not the record path's
      }
      EXPECT_EQ(cc->poll(sink), 0u);
      EXPECT_EQ(fake_.callCount("cuEventRecord") - records, static_cast<long long>(want * kOps));
    }
    EXPECT_EQ(calls, want * kOps) << "driver calls per op: " << double(calls) / kOps;
    EXPECT_EQ(fake_.callCount("cuStreamGetCtx"), ctx_queries);
    EXPECT_EQ(fake_.callCount("cuStreamIsCapturing"), 0);
    EXPECT_EQ(fake_.stats().timing_events, 0u);
  }
}

TEST_F(CudaMarkersTest, StartIsInferredFromThePreviousOpOnTheStream) {
  auto cc = make(16, Markers::kEnd);
  ASSERT_NE(cc, nullptr);
  fake_.setStreamBlocked(stream(1), 1);
  for (uint64_t i = 1; i <= 3; ++i) recordOp(*cc, stream(1), i);
  recordOp(*cc, stream(2), 4);  // another stream: not behind stream 1's ops
  RecordingSink sink;
  EXPECT_EQ(cc->poll(sink), 3u);
  EXPECT_EQ(sink.ops[1].started, 1);
  EXPECT_EQ(sink.ops.count(2), 0u) << "op 2 waits behind op 1";
  EXPECT_EQ(sink.ops.count(3), 0u);
  EXPECT_EQ(sink.ops[4].completed, 1);
  fake_.advanceStream(stream(1), 1);  // op 1's kernel finished
  EXPECT_EQ(cc->poll(sink), 2u);
  EXPECT_EQ(sink.ops[1].completed, 1);
  EXPECT_EQ(sink.ops[2].started, 1);
  EXPECT_EQ(sink.ops[2].completed, 0);
  EXPECT_EQ(sink.ops.count(3), 0u);
  fake_.setStreamBlocked(stream(1), 0);
  EXPECT_EQ(cc->poll(sink), 0u);
  for (uint64_t i = 1; i <= 3; ++i) {
    EXPECT_EQ(sink.ops[i].started, 1) << i;
    EXPECT_EQ(sink.ops[i].completed, 1) << i;
    EXPECT_TRUE(sink.ops[i].started_before_completed) << i;
  }
}

// With start markers an op blocked behind other work on its stream is not started, even with no
// NCCL op before it: what cuda-full is for.
TEST_F(CudaMarkersTest, StartMarkersSeeWorkThatIsNotOurs) {
  auto cc = make(16, Markers::kStartAndEnd);
  ASSERT_NE(cc, nullptr);
  fake_.setStreamBlocked(stream(1), 1);
  recordOp(*cc, stream(1), 1);
  RecordingSink sink;
  EXPECT_EQ(cc->poll(sink), 1u);
  EXPECT_TRUE(sink.ops.empty());
  fake_.advanceStream(stream(1), 1);  // the start marker ran, the op's kernel did not finish
  EXPECT_EQ(cc->poll(sink), 1u);
  EXPECT_EQ(sink.ops[1].started, 1);
  EXPECT_EQ(sink.ops[1].completed, 0);
}

// Markers on a capturing stream cost no extra call, add nothing to the stream, and the watchdog
// reports the op captured (CUDA_ERROR_CAPTURED_EVENT) instead of waiting for it forever.
TEST_F(CudaMarkersTest, OpUnderGraphCaptureIsReportedCaptured) {
  for (const Markers markers : {Markers::kEnd, Markers::kStartAndEnd}) {
    fake_.reset();
    auto cc = make(4, markers);
    ASSERT_NE(cc, nullptr);
    RecordingSink sink;
    recordOp(*cc, stream(1), 1);  // warm-up
    EXPECT_EQ(cc->poll(sink), 0u);
    fake_.setStreamCapturing(stream(1), 1);
    const uint64_t calls = recordOp(*cc, stream(1), 2);
    EXPECT_EQ(calls, markers == Markers::kEnd ? 1u : 2u);
    EXPECT_EQ(fake_.callCount("cuStreamIsCapturing"), 0);
    EXPECT_EQ(cc->poll(sink), 0u);
    EXPECT_EQ(sink.ops[2].captured, 1);
    EXPECT_EQ(sink.ops[2].completed, 0);
    EXPECT_EQ(sink.ops[2].lost, 0);
    // Capture over: the recycled slot's events track live work again.
    fake_.setStreamCapturing(stream(1), 0);
    fake_.setStreamBlocked(stream(1), 1);
    recordOp(*cc, stream(1), 3);
    EXPECT_EQ(cc->poll(sink), 1u);
    fake_.setStreamBlocked(stream(1), 0);
    EXPECT_EQ(cc->poll(sink), 0u);
    EXPECT_EQ(sink.ops[3].completed, 1);
    EXPECT_EQ(sink.ops[3].captured, 0);
  }
}

// cuStreamDestroy, then cuStreamCreate in another context hands out the same handle: the
// remembered context is stale, cuEventRecord refuses the old context's event, and the op is
// recorded with events of the new one after one cuStreamGetCtx.
TEST_F(CudaMarkersTest, StreamHandleReusedInAnotherContextIsResolvedAgain) {
  auto cc = make(8, Markers::kEnd);
  ASSERT_NE(cc, nullptr);
  static int ctx_b;
  RecordingSink sink;
  for (uint64_t i = 0; i < 3; ++i) recordOp(*cc, stream(1), i);  // three slots, pending
  EXPECT_EQ(fake_.callCount("cuStreamGetCtx"), 1);
  fake_.setStreamContext(stream(1), &ctx_b);
  bool tracked = false;
  recordOp(*cc, stream(1), 10, &tracked);
  EXPECT_TRUE(tracked);
  EXPECT_EQ(fake_.callCount("cuStreamGetCtx"), 2);
  EXPECT_EQ(cc->poll(sink), 0u);
  EXPECT_EQ(sink.ops[10].completed, 1);
  EXPECT_EQ(sink.ops[10].lost, 0);
  // Steady again: one call per op, in the new context.
  EXPECT_EQ(recordOp(*cc, stream(1), 11, &tracked), 1u);
  EXPECT_TRUE(tracked);
  EXPECT_EQ(fake_.callCount("cuStreamGetCtx"), 2);
  EXPECT_EQ(cc->poll(sink), 0u);
  // No event leaked: the refused one went back to its context's pool, and is destroyed with it.
  EXPECT_EQ(fake_.stats().live, 5u) << "3 + 1 created in the old context, 1 in the new";
  cc.reset();
  EXPECT_EQ(fake_.stats().live, 0u);
}

// The default streams mean the thread's current context, which cudaSetDevice changes behind our
// back: the same rule catches it.
TEST_F(CudaMarkersTest, DefaultStreamFollowsTheThreadsCurrentContext) {
  auto cc = make(8, Markers::kEnd);
  ASSERT_NE(cc, nullptr);
  static int ctx_b;
  RecordingSink sink;
  EXPECT_GT(recordOp(*cc, nullptr, 1), 1u);
  EXPECT_EQ(cc->poll(sink), 0u);
  EXPECT_EQ(recordOp(*cc, nullptr, 2), 1u);
  EXPECT_EQ(cc->poll(sink), 0u);
  fake_.setCurrentContext(&ctx_b);
  bool tracked = false;
  recordOp(*cc, nullptr, 3, &tracked);
  EXPECT_TRUE(tracked);
  EXPECT_EQ(cc->poll(sink), 0u);
  EXPECT_EQ(recordOp(*cc, nullptr, 4, &tracked), 1u);
  EXPECT_TRUE(tracked);
  EXPECT_EQ(cc->poll(sink), 0u);
  for (uint64_t i = 1; i <= 4; ++i) EXPECT_EQ(sink.ops[i].completed, 1) << i;
  // Another thread has its own current context: remembered per thread.
  std::thread other([&] {
    EXPECT_EQ(recordOp(*cc, nullptr, 5, &tracked), 2u) << "cuCtxGetCurrent + cuEventRecord";
    EXPECT_TRUE(tracked);
  });
  other.join();
  EXPECT_EQ(cc->poll(sink), 0u);
  EXPECT_EQ(sink.ops[5].completed, 1);
}

// A refusal the context does not explain (a sticky error) falls back to host completion after
// one look at the stream's context, as before.
TEST_F(CudaMarkersTest, RecordErrorInTheSameContextFallsBack) {
  auto cc = make(2, Markers::kEnd);
  ASSERT_NE(cc, nullptr);
  RecordingSink sink;
  recordOp(*cc, stream(1), 1);
  EXPECT_EQ(cc->poll(sink), 0u);
  fake_.failEventRecords(1);
  bool tracked = true;
  EXPECT_EQ(recordOp(*cc, stream(1), 2, &tracked), 2u) << "cuEventRecord + cuStreamGetCtx";
  EXPECT_FALSE(tracked);
  EXPECT_EQ(cc->poll(sink), 0u);
  EXPECT_EQ(sink.ops.count(2), 0u);
  // The refused event was dropped (its handle may be dead): the slot gets a new one.
  EXPECT_EQ(recordOp(*cc, stream(1), 3, &tracked), 3u)
      << "cuCtxGetCurrent + cuEventCreate + cuEventRecord";
  EXPECT_TRUE(tracked);
  EXPECT_EQ(cc->poll(sink), 0u);
  EXPECT_EQ(recordOp(*cc, stream(1), 4, &tracked), 1u);
}

TEST_F(CudaMarkersTest, ConcurrentProducersAndPollerLoseNothing) {
  constexpr int kThreads = 4;
  constexpr uint64_t kOps = 5000;
  auto cc = make(64, Markers::kEnd);
  ASSERT_NE(cc, nullptr);
  std::atomic<int> producers_left{kThreads};
  RecordingSink sink;
  std::thread poller([&] {
    while (cc->poll(sink) > 0 || producers_left.load() > 0) std::this_thread::yield();
  });
  std::vector<std::thread> producers;
  for (int t = 0; t < kThreads; ++t) {
    producers.emplace_back([&, t] {
      void* s = stream(100 + t);
      for (uint64_t k = 0; k < kOps; ++k) {
        if (k % 100 == 0) fake_.setStreamBlocked(s, 1);
        if (k % 100 == 50) fake_.setStreamBlocked(s, 0);
        int32_t ticket;
        while ((ticket = cc->beforeCall(s)) < 0) {
          fake_.setStreamBlocked(s, 0);
          std::this_thread::yield();
        }
        EXPECT_TRUE(cc->afterCall(ticket, s, uint64_t(t) * kOps + k, true));
      }
      fake_.setStreamBlocked(s, 0);
      producers_left.fetch_sub(1);
    });
  }
  for (auto& p : producers) p.join();
  poller.join();
  EXPECT_EQ(cc->poll(sink), 0u);
  ASSERT_EQ(sink.ops.size(), kThreads * kOps);
  for (const auto& [index, o] : sink.ops) {
    EXPECT_EQ(o.started, 1) << index;
    EXPECT_EQ(o.completed, 1) << index;
    EXPECT_TRUE(o.started_before_completed) << index;
  }
}

TEST(StreamContextsTest, RemembersPerHandleAndDefaultStreamsPerThread) {
  StreamContexts contexts;
  static int a, b;
  void* s1 = stream(1);
  EXPECT_EQ(contexts.find(s1), nullptr);
  EXPECT_TRUE(contexts.remember(s1, &a));
  EXPECT_EQ(contexts.find(s1), &a);
  EXPECT_TRUE(contexts.remember(s1, &b));
  EXPECT_EQ(contexts.find(s1), &b);
  EXPECT_TRUE(contexts.remember(nullptr, &a));
  EXPECT_EQ(contexts.find(reinterpret_cast<void*>(2)), &a);
  std::thread([&] { EXPECT_EQ(contexts.find(nullptr), nullptr); }).join();
  StreamContexts other;
  EXPECT_EQ(other.find(nullptr), nullptr) << "another object's thread-local context";
}

TEST(StreamContextsTest, FullTableSaysSo) {
  StreamContexts contexts;
  static int a;
  uint32_t remembered = 0;
  for (uintptr_t n = 1; n <= 4 * StreamContexts::kCapacity; ++n)
    remembered += contexts.remember(stream(n), &a) ? 1 : 0;
  EXPECT_LE(remembered, StreamContexts::kCapacity);
  EXPECT_GT(remembered, StreamContexts::kCapacity / 2);
  for (uintptr_t n = 1; n <= 4 * StreamContexts::kCapacity; ++n) {
    void* found = contexts.find(stream(n));
    EXPECT_TRUE(found == nullptr || found == &a);
  }
}

}  // namespace
}  // namespace ncclrec::recorder
