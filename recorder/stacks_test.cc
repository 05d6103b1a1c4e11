#include "recorder/stacks.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "format/bbox_ring.h"

// The call chains are kept out of anonymous namespaces so that dladdr can name them (the test is
// linked with -rdynamic).
namespace ncclrec::recorder::stacks_test {

__attribute__((noinline)) int chainC(uint64_t* out, int max_depth, int skip) {
  const int n = captureStack(out, max_depth, skip);
  asm volatile("" : : "r"(n) : "memory");  // no tail call: chainC keeps its frame
  return n;
}
__attribute__((noinline)) int chainB(uint64_t* out, int max_depth, int skip) {
  const int n = chainC(out, max_depth, skip);
  asm volatile("" : : "r"(n) : "memory");
  return n;
}
__attribute__((noinline)) int chainA(uint64_t* out, int max_depth, int skip) {
  const int n = chainB(out, max_depth, skip);
  asm volatile("" : : "r"(n) : "memory");
  return n;
}

// Recurses `levels` deep, then runs `body` there.
template <class F>
__attribute__((noinline)) void atDepth(int levels, F& body) {
  if (levels == 0) {
    body();
  } else {
    atDepth(levels - 1, body);
  }
  asm volatile("" : : : "memory");
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define NCCLREC_TEST_CLOBBERED_RBP 1
// Built without a frame pointer and with rbp holding `garbage` at the call, as in code compiled
// with -fomit-frame-pointer that uses rbp as a general register.
__attribute__((noinline, optimize("omit-frame-pointer"))) int captureWithGarbageRbp(
    uint64_t garbage, uint64_t* out, int max_depth) {
  asm volatile("movq %0, %%rbp" : : "r"(garbage) : "rbp");
  const int n = captureStack(out, max_depth, 0);
  asm volatile("" : : "r"(n) : "memory");
  return n;
}
#endif

}  // namespace ncclrec::recorder::stacks_test

namespace ncclrec::recorder {
namespace {

using stacks_test::chainA;
using stacks_test::chainB;
using stacks_test::chainC;

// True when the return address `ret` lies in the function `fn` (looked up at ret - 1: the call
// instruction, which is inside the caller even when the call is its last instruction).
bool returnsInto(uint64_t ret, void* fn) {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(ret - 1), &info) == 0) return false;
  return info.dli_saddr == fn;
}

const char* modeName(UnwindMode mode) {
  return mode == UnwindMode::kLibunwind ? "libunwind" : "frame-pointer";
}

class CaptureTest : public ::testing::TestWithParam<UnwindMode> {
 protected:
  void SetUp() override {
    const char* reason = nullptr;
    const bool loaded = initUnwinder(GetParam(), &reason);
    ASSERT_NE(reason, nullptr);
    if (GetParam() == UnwindMode::kLibunwind && !loaded) {
      GTEST_SKIP() << "libunwind not available: " << reason;
    }
    ASSERT_EQ(activeUnwindMode(), GetParam()) << reason;
  }
  void TearDown() override { initUnwinder(UnwindMode::kFramePointer); }
};

TEST_P(CaptureTest, KnownChainInOrder) {
  uint64_t frames[16] = {};
  const int n = chainA(frames, 16, 0);
  ASSERT_GE(n, 4);
  EXPECT_TRUE(returnsInto(frames[0], reinterpret_cast<void*>(&chainC)));
  EXPECT_TRUE(returnsInto(frames[1], reinterpret_cast<void*>(&chainB)));
  EXPECT_TRUE(returnsInto(frames[2], reinterpret_cast<void*>(&chainA)));
}

TEST_P(CaptureTest, SkipDropsInnermostFrames) {
  uint64_t frames[2][16] = {};
  int n[2] = {};
  volatile int runs = 2;  // not unrolled: both captures come from one call site
  for (int i = 0; i < runs; ++i) n[i] = chainA(frames[i], 16, 2 * i);
  const uint64_t* all = frames[0];
  const uint64_t* skipped = frames[1];
  ASSERT_GE(n[0], 4);
  EXPECT_EQ(n[1], n[0] - 2);
  EXPECT_TRUE(returnsInto(skipped[0], reinterpret_cast<void*>(&chainA)));
  for (int i = 0; i < n[1]; ++i) EXPECT_EQ(skipped[i], all[i + 2]) << i;
}

TEST_P(CaptureTest, MaxDepthBoundsOutput) {
  uint64_t frames[4] = {};
  uint64_t guard = 0x5a5a5a5a;
  struct {
    uint64_t frames[2];
    uint64_t guard;
  } buf{{0, 0}, guard};
  EXPECT_EQ(chainA(buf.frames, 2, 0), 2);
  EXPECT_EQ(buf.guard, guard);
  EXPECT_TRUE(returnsInto(buf.frames[1], reinterpret_cast<void*>(&chainB)));
  EXPECT_EQ(captureStack(frames, 0, 0), 0);
  EXPECT_EQ(captureStack(nullptr, 4, 0), 0);
}

TEST_P(CaptureTest, WorksOnOtherThreads) {
#if defined(__SANITIZE_THREAD__)
  // libunwind frees its per-thread cache from a TSD destructor that locks a mutex after
  // ThreadSanitizer has torn down the exiting thread's state, which crashes TSan itself.
  if (GetParam() == UnwindMode::kLibunwind) GTEST_SKIP() << "libunwind threads under TSan";
#endif
  std::vector<int> depths(4);
  std::vector<char> ok(4);  // not vector<bool>: threads write neighbouring elements
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      uint64_t frames[16] = {};
      depths[t] = chainA(frames, 16, 0);
      ok[t] = returnsInto(frames[0], reinterpret_cast<void*>(&chainC)) &&
              returnsInto(frames[2], reinterpret_cast<void*>(&chainA));
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < 4; ++t) {
    EXPECT_GE(depths[t], 3) << "thread " << t;
    EXPECT_TRUE(ok[t]) << "thread " << t;
  }
}

// Timing is printed for the record, never asserted.
TEST_P(CaptureTest, PrintsTimingAt16Frames) {
  constexpr int kIters = 20000;
  int depth = 0;
  double ns_per_call = 0;
  auto body = [&] {
    uint64_t frames[16];
    depth = captureStack(frames, 16, 0);
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kIters; ++i) {
      const int n = captureStack(frames, 16, 0);
      asm volatile("" : : "r"(n), "r"(frames) : "memory");
    }
    const auto elapsed = std::chrono::steady_clock::now() - start;
    ns_per_call = std::chrono::duration<double, std::nano>(elapsed).count() / kIters;
  };
  stacks_test::atDepth(24, body);
  EXPECT_EQ(depth, 16);
  std::printf("captureStack(16 frames), %s: %.1f ns/call\n", modeName(GetParam()), ns_per_call);
}

INSTANTIATE_TEST_SUITE_P(Modes, CaptureTest,
                         ::testing::Values(UnwindMode::kFramePointer, UnwindMode::kLibunwind),
                         [](const auto& info) {
                           return info.param == UnwindMode::kLibunwind ? "Libunwind"
                                                                       : "FramePointer";
                         });

TEST(InitUnwinder, FramePointerModeDoesNotLoadLibunwind) {
  const char* reason = nullptr;
  EXPECT_FALSE(initUnwinder(UnwindMode::kFramePointer, &reason));
  EXPECT_EQ(activeUnwindMode(), UnwindMode::kFramePointer);
  EXPECT_NE(std::strstr(reason, "frame-pointer"), nullptr) << reason;
}

TEST(InitUnwinder, AutoPrefersLibunwindWhenItLoads) {
  const bool present = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL) != nullptr;
  const char* reason = nullptr;
  EXPECT_EQ(initUnwinder(UnwindMode::kAuto, &reason), present) << reason;
  EXPECT_EQ(activeUnwindMode(), present ? UnwindMode::kLibunwind : UnwindMode::kFramePointer);
  initUnwinder(UnwindMode::kFramePointer);
}

// A frame pointer walk over synthetic frames: [fp] = caller's fp, [fp + 8] = return address.
TEST(WalkFramePointers, StopsOnEveryInvalidLink) {
  alignas(16) uintptr_t stack[32] = {};
  const auto at = [&](int i) { return reinterpret_cast<uintptr_t>(&stack[i]); };
  const uintptr_t lo = at(0);
  const uintptr_t hi = at(32);
  uint64_t out[16];

  // A well-formed chain 0 -> 4 -> 8 -> 12, ending on a null return address.
  stack[0] = at(4), stack[1] = 0x1000;
  stack[4] = at(8), stack[5] = 0x2000;
  stack[8] = at(12), stack[9] = 0x3000;
  stack[12] = at(16), stack[13] = 0;
  ASSERT_EQ(detail::walkFramePointers(at(0), lo, hi, out, 16, 0), 3);
  EXPECT_EQ(out[0], 0x1000u);
  EXPECT_EQ(out[2], 0x3000u);
  EXPECT_EQ(detail::walkFramePointers(at(0), lo, hi, out, 16, 1), 2);
  EXPECT_EQ(out[0], 0x2000u);
  EXPECT_EQ(detail::walkFramePointers(at(0), lo, hi, out, 2, 0), 2);

  stack[8] = at(4);  // goes back down: stop after the frame that points there
  EXPECT_EQ(detail::walkFramePointers(at(0), lo, hi, out, 16, 0), 3);
  stack[8] = at(8);  // points at itself
  EXPECT_EQ(detail::walkFramePointers(at(0), lo, hi, out, 16, 0), 3);
  stack[8] = at(12) + 3;  // misaligned
  EXPECT_EQ(detail::walkFramePointers(at(0), lo, hi, out, 16, 0), 3);
  stack[8] = hi + 64;  // past the stack
  EXPECT_EQ(detail::walkFramePointers(at(0), lo, hi, out, 16, 0), 3);
  stack[8] = at(31);  // the frame's return address would lie past hi
  EXPECT_EQ(detail::walkFramePointers(at(0), lo, hi, out, 16, 0), 3);

  EXPECT_EQ(detail::walkFramePointers(lo - 16, lo, hi, out, 16, 0), 0);
  EXPECT_EQ(detail::walkFramePointers(0, lo, hi, out, 16, 0), 0);
  EXPECT_EQ(detail::walkFramePointers(at(0), lo, lo + 8, out, 16, 0), 0);
}

#ifdef NCCLREC_TEST_CLOBBERED_RBP
TEST(WalkFramePointers, CodeWithoutFramePointersDoesNotCrash) {
  initUnwinder(UnwindMode::kFramePointer);
  // Values rbp may hold in code that uses it as a general register, including addresses in
  // this thread's stack whose contents are not frames.
  alignas(16) uint64_t fake[8];
  std::memset(fake, 0xa5, sizeof(fake));
  fake[0] = reinterpret_cast<uintptr_t>(&fake[2]);
  fake[1] = 0x1234;
  fake[2] = reinterpret_cast<uintptr_t>(&fake[0]);  // loops back: must stop
  fake[3] = 0x5678;
  auto heap = std::make_unique<uint64_t[]>(4);
  const uint64_t garbage[] = {0,
                              1,
                              0xdeadbeefdeadbeefull,
                              ~0ull,
                              reinterpret_cast<uintptr_t>(heap.get()),
                              reinterpret_cast<uintptr_t>(&fake[0]),
                              reinterpret_cast<uintptr_t>(&fake[0]) + 4,
                              reinterpret_cast<uintptr_t>(&garbage)};
  for (uint64_t value : garbage) {
    uint64_t frames[16] = {};
    const int n = stacks_test::captureWithGarbageRbp(value, frames, 16);
    ASSERT_GE(n, 1) << std::hex << value;
    EXPECT_LE(n, 3) << std::hex << value;
    EXPECT_TRUE(
        returnsInto(frames[0], reinterpret_cast<void*>(&stacks_test::captureWithGarbageRbp)))
        << std::hex << value;
  }
}
#endif

// A zeroed, heap-backed black box with only a stack table of the given geometry.
class Bbox {
 public:
  Bbox(uint32_t stack_capacity, uint32_t stack_depth) {
    const auto g = format::computeGeometry(1, 0, stack_capacity, stack_depth, 0);
    bytes_ = g.file_bytes;
    memory_ = static_cast<uint8_t*>(std::aligned_alloc(4096, bytes_));
    std::memset(memory_, 0, bytes_);
    format::initHeader(header(), 1, 0, stack_capacity, stack_depth, 0);
  }
  ~Bbox() { std::free(memory_); }
  format::BboxHeader* header() { return reinterpret_cast<format::BboxHeader*>(memory_); }

 private:
  uint8_t* memory_;
  size_t bytes_;
};

std::vector<uint64_t> stackOf(int seed, int depth) {
  std::vector<uint64_t> frames(depth);
  for (int i = 0; i < depth; ++i) frames[i] = 0x400000u + 0x100u * seed + 8u * i;
  return frames;
}

TEST(StackTable, InternsOnceAndRecordsFrames) {
  Bbox bbox(16, 8);
  StackTable table(bbox.header());
  const auto a = stackOf(1, 5);
  const auto b = stackOf(2, 5);
  const uint32_t id_a = table.intern(a.data(), 5);
  const uint32_t id_b = table.intern(b.data(), 5);
  ASSERT_NE(id_a, format::kNoStack);
  ASSERT_NE(id_b, format::kNoStack);
  EXPECT_NE(id_a, id_b);
  EXPECT_EQ(table.intern(a.data(), 5), id_a);
  EXPECT_NE(table.intern(a.data(), 4), id_a);  // a prefix is another stack
  EXPECT_EQ(bbox.header()->stack_count, 3u);
  const format::StackRecord* record = format::stackRecord(bbox.header(), id_a);
  EXPECT_EQ(record->valid, format::kValidMark);
  EXPECT_EQ(record->depth, 5u);
  EXPECT_EQ(std::memcmp(record->frames, a.data(), 5 * sizeof(uint64_t)), 0);
  EXPECT_EQ(record->hash, detail::hashStack(a.data(), 5));
  EXPECT_EQ(table.intern(a.data(), 0), format::kNoStack);
  EXPECT_EQ(bbox.header()->stacks_dropped, 0u);
}

TEST(StackTable, TruncatesToHeaderDepth) {
  Bbox bbox(16, 8);
  StackTable table(bbox.header());
  const auto deep = stackOf(3, 20);
  const uint32_t id = table.intern(deep.data(), 20);
  ASSERT_NE(id, format::kNoStack);
  EXPECT_EQ(format::stackRecord(bbox.header(), id)->depth, 8u);
  EXPECT_EQ(table.intern(deep.data(), 8), id);
}

TEST(StackTable, FullTableDropsAndCounts) {
  Bbox bbox(4, 8);
  StackTable table(bbox.header());
  std::set<uint32_t> ids;
  for (int s = 0; s < 4; ++s) ids.insert(table.intern(stackOf(s, 3).data(), 3));
  EXPECT_EQ(ids, (std::set<uint32_t>{0, 1, 2, 3}));
  EXPECT_EQ(table.intern(stackOf(9, 3).data(), 3), format::kNoStack);
  EXPECT_EQ(table.intern(stackOf(10, 3).data(), 3), format::kNoStack);
  EXPECT_EQ(bbox.header()->stacks_dropped, 2u);
  EXPECT_EQ(bbox.header()->stack_count, 4u);
  // Stacks already in a full table are still found.
  EXPECT_NE(table.intern(stackOf(2, 3).data(), 3), format::kNoStack);
  EXPECT_EQ(bbox.header()->stacks_dropped, 2u);
}

// Checks that every published record is unique and returns how many there are.
uint32_t countUniqueRecords(format::BboxHeader* header) {
  std::set<std::vector<uint64_t>> seen;
  uint32_t count = 0;
  for (uint32_t i = 0; i < header->stack_capacity; ++i) {
    const format::StackRecord* r = format::stackRecord(header, i);
    if (r->hash == 0) continue;
    EXPECT_EQ(r->valid, format::kValidMark) << "slot " << i;
    std::vector<uint64_t> frames(r->frames, r->frames + r->depth);
    EXPECT_TRUE(seen.insert(frames).second) << "duplicate stack in slot " << i;
    ++count;
  }
  return count;
}

void runConcurrentInterns(uint32_t capacity, int distinct, int iterations) {
  constexpr int kThreads = 8;
  Bbox bbox(capacity, 16);
  StackTable table(bbox.header());
  std::vector<std::vector<uint64_t>> stacks;
  for (int s = 0; s < distinct; ++s) stacks.push_back(stackOf(s, 1 + s % 16));
  std::vector<std::vector<uint32_t>> ids(kThreads, std::vector<uint32_t>(distinct, 0));
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      while (!go.load()) {
      }
      for (int i = 0; i < iterations; ++i) {
        const int s = (i * 7 + t * 13) % distinct;  // threads visit stacks in different orders
        const uint32_t id = table.intern(stacks[s].data(), static_cast<int>(stacks[s].size()));
        if (i < distinct * 2) {
          if (ids[t][s] == 0) ids[t][s] = id + 1;
        } else if (ids[t][s] != id + 1) {
          ids[t][s] = 0xdead;  // an id changed: reported below
        }
      }
    });
  }
  go.store(true);
  for (auto& thread : threads) thread.join();
  for (int s = 0; s < distinct; ++s) {
    ASSERT_NE(ids[0][s], 0u);
    ASSERT_NE(ids[0][s] - 1, format::kNoStack);
    for (int t = 1; t < kThreads; ++t) EXPECT_EQ(ids[t][s], ids[0][s]) << "thread " << t;
  }
  EXPECT_EQ(countUniqueRecords(bbox.header()), static_cast<uint32_t>(distinct));
  EXPECT_EQ(bbox.header()->stack_count, static_cast<uint32_t>(distinct));
  EXPECT_EQ(bbox.header()->stacks_dropped, 0u);
}

TEST(StackTable, ConcurrentInternsOfFewStacksAgree) {
  runConcurrentInterns(/*capacity=*/7, /*distinct=*/5, /*iterations=*/10000);
}

TEST(StackTable, ConcurrentInternsOfManyStacksAgree) {
  runConcurrentInterns(/*capacity=*/211, /*distinct=*/200, /*iterations=*/10000);
}

}  // namespace
}  // namespace ncclrec::recorder
