// Nonblocking communicators with CUDA markers (in_progress.h): an op whose call or GroupEnd
// returned ncclInProgress gets its end marker only when ncclCommGetAsyncError reports the
// communicator settled (NCCL launches it later, from its own thread), one marker per op; and the
// completion arbiter of NCCLREC_COMPLETION=auto (CallHandle::arbiter). The fake CUDA driver
// (tests/support/fake_cuda.cc) counts the markers.
#include "recorder/in_progress.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <thread>
#include <vector>

#include "format/bbox_ring.h"
#include "recorder/recorder.h"
#include "recorder/testing/recorder_fixture.h"

namespace ncclrec::recorder {
namespace {

using format::EventState;
using format::OpType;
using testing::beginOp;
using testing::RecorderTest;
using testing::registerComm;

constexpr int kInProgress = 7;

const std::map<std::string, std::string> kCudaEnv = {
    {"NCCLREC_COMPLETION", "cuda"},
    {"NCCLREC_CUDA_LIBRARY", NCCLREC_TEST_FAKE_CUDA},
    {"NCCLREC_POLL_MS", "5"}};

// cuEventRecord calls so far, from the fake driver the recorder opened (same path, same object).
long long markers() {
  static auto count = reinterpret_cast<long long (*)(const char*)>(
      dlsym(dlopen(NCCLREC_TEST_FAKE_CUDA, RTLD_NOW | RTLD_LOCAL), "fakeCudaCallCount"));
  return count != nullptr ? count("cuEventRecord") : -1;
}

EventState stateOf(Recorder* r, const CallHandle& c) {
  format::Event e;
  EXPECT_TRUE(format::readEvent(r->header(), c.index, &e));
  return static_cast<EventState>(e.state);
}

// The watchdog completes an op once its marker is done (at once on the fake's unblocked streams).
bool completesSoon(Recorder* r, const CallHandle& c) {
  for (int i = 0; i < 400 && stateOf(r, c) != EventState::kCompleted; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return stateOf(r, c) == EventState::kCompleted;
}

TEST(InProgressQueue, KeepsOrderRefusesWhenFullAndLosesNothingAcrossThreads) {
  InProgressQueue q;
  HeldOp op;
  EXPECT_FALSE(q.pop(&op));
  for (uint32_t i = 0; i < InProgressQueue::kCapacity; ++i) ASSERT_TRUE(q.push({i}));
  EXPECT_FALSE(q.push({999}));
  for (uint32_t i = 0; i < InProgressQueue::kCapacity; ++i) {
    ASSERT_TRUE(q.pop(&op));
    EXPECT_EQ(op.index, i);
  }
  EXPECT_TRUE(q.empty());
  // Two producers and two consumers: every op comes out exactly once.
  constexpr uint64_t kPerProducer = 20000;
  std::atomic<uint64_t> popped{0};
  std::vector<std::vector<uint64_t>> seen(2);
  std::vector<std::thread> threads;
  for (uint64_t p = 0; p < 2; ++p) {
    threads.emplace_back([&q, p] {
      for (uint64_t i = 0; i < kPerProducer; ++i) {
        while (!q.push({p * kPerProducer + i})) std::this_thread::yield();
      }
    });
    threads.emplace_back([&q, &popped, &seen, p] {
      HeldOp got;
      while (popped.load() < 2 * kPerProducer) {
        if (q.pop(&got)) {
          seen[p].push_back(got.index);
          popped.fetch_add(1);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  std::set<uint64_t> all(seen[0].begin(), seen[0].end());
  all.insert(seen[1].begin(), seen[1].end());
  EXPECT_EQ(all.size(), 2 * kPerProducer);
  EXPECT_EQ(seen[0].size() + seen[1].size(), 2 * kPerProducer);
}

TEST_F(RecorderTest, InProgressOpGetsItsMarkerOnlyWhenTheCommunicatorSettles) {
  runInChild(kCudaEnv, [] {
    Recorder* r = Recorder::get();
    ASSERT_NE(r, nullptr);
    ASSERT_NE(r->cuda(), nullptr);
    ASSERT_GE(markers(), 0);
    int comm = 0;
    registerComm(r, &comm, 41, 0, 2);
    void* s = reinterpret_cast<void*>(0x7100);
    for (int i = 0; i < 50; ++i) {  // past the warm-up: the steady state is one marker per op
      const long long before = markers();
      CallHandle a = beginOp(r, OpType::kAllReduce, &comm, i, s);
      ASSERT_TRUE(a.timed_by_cuda);
      r->end(a, kInProgress);
      EXPECT_EQ(markers(), before) << "a marker before NCCL's launch would complete early";
      r->asyncSettled(&comm, kInProgress);  // the shim never passes it; nothing may happen
      if (i == 0) std::this_thread::sleep_for(std::chrono::milliseconds(30));  // polls pass
      EXPECT_EQ(stateOf(r, a), EventState::kEnqueued);
      r->asyncSettled(&comm, 0);
      EXPECT_EQ(markers(), before + 1);
      ASSERT_TRUE(completesSoon(r, a)) << i;
    }
  });
}

TEST_F(RecorderTest, GroupEndInProgressHoldsEveryGroupedOpUntilTheSettle) {
  runInChild(kCudaEnv, [] {
    Recorder* r = Recorder::get();
    ASSERT_NE(r, nullptr);
    ASSERT_NE(r->cuda(), nullptr);
    int comm = 0;
    registerComm(r, &comm, 42, 0, 2);
    void* s = reinterpret_cast<void*>(0x7200);
    for (int round = 0; round < 3; ++round) {
      const long long before = markers();
      r->groupStarted();
      CallHandle send = beginOp(r, OpType::kSend, &comm, 1, s, 1);
      r->end(send, 0);
      CallHandle recv = beginOp(r, OpType::kRecv, &comm, 1, s, 1);
      r->end(recv, 0);
      ASSERT_TRUE(r->groupEnding());
      r->groupEnded(kInProgress, false);
      EXPECT_EQ(markers(), before);
      EXPECT_EQ(stateOf(r, send), EventState::kEnqueued);
      EXPECT_EQ(stateOf(r, recv), EventState::kEnqueued);
      r->asyncSettled(&comm, 0);
      EXPECT_EQ(markers(), before + 2);
      EXPECT_TRUE(completesSoon(r, send));
      EXPECT_TRUE(completesSoon(r, recv));
    }
    // Settled with an error: the held op fails, and no marker is recorded for it.
    const long long before = markers();
    CallHandle a = beginOp(r, OpType::kAllReduce, &comm, 1, s);
    r->end(a, kInProgress);
    r->asyncSettled(&comm, 6);  // ncclRemoteError
    EXPECT_EQ(markers(), before);
    EXPECT_EQ(stateOf(r, a), EventState::kFailed);
  });
}

TEST_F(RecorderTest, ArbiterGivesAnOpToThePluginOrToItsMarkerNeverBoth) {
  runInChild({{"NCCLREC_COMPLETION", "auto"},
              {"NCCLREC_CUDA_LIBRARY", NCCLREC_TEST_FAKE_CUDA},
              {"NCCLREC_POLL_MS", "5"}},
             [] {
               Recorder* r = Recorder::get();
               ASSERT_NE(r, nullptr);
               ASSERT_TRUE(r->arbitratesCompletion());
               int comm = 0;
               registerComm(r, &comm, 43, 0, 2);
               void* s = reinterpret_cast<void*>(0x7300);
               // The plugin saw kernel channels (kOwnerPlugin): no marker, the op stays its.
               std::atomic<uint8_t> plugin{kOwnerPlugin};
               long long before = markers();
               CallHandle a = beginOp(r, OpType::kAllReduce, &comm, 1, s);
               ASSERT_TRUE(a.timed_by_cuda);
               a.arbiter = &plugin;
               a.profiler_completes = true;
               r->end(a, 0);
               EXPECT_EQ(markers(), before);
               std::this_thread::sleep_for(std::chrono::milliseconds(30));
               EXPECT_EQ(stateOf(r, a), EventState::kEnqueued) << "left to the plugin";
               // Undecided after the call (no kernel channel): the marker takes it.
               std::atomic<uint8_t> undecided{kOwnerUndecided};
               before = markers();
               CallHandle b = beginOp(r, OpType::kAllReduce, &comm, 1, s);
               b.arbiter = &undecided;
               b.profiler_completes = true;
               r->end(b, 0);
               EXPECT_EQ(undecided.load(), kOwnerMarker);
               EXPECT_EQ(markers(), before + 1);
               EXPECT_TRUE(completesSoon(r, b));
               // Nonblocking: decided at the settle, where the plugin may have taken it.
               std::atomic<uint8_t> later{kOwnerUndecided};
               before = markers();
               CallHandle c = beginOp(r, OpType::kAllReduce, &comm, 1, s);
               c.arbiter = &later;
               c.profiler_completes = true;
               r->end(c, kInProgress);
               later.store(kOwnerPlugin);  // NCCL's thread started it with channels
               r->asyncSettled(&comm, 0);
               EXPECT_EQ(markers(), before);
               EXPECT_EQ(stateOf(r, c), EventState::kEnqueued);
             });
}

}  // namespace
}  // namespace ncclrec::recorder
