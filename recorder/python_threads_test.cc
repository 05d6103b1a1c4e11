// The stable part of two walks of another thread's Python frame chain (python_threads.cc). The
// walks themselves run in tests/python (threads_test.sh: a thread with every signal blocked, under
// every CPython found).
#include <gtest/gtest.h>

#include <vector>

#include "format/bbox_layout.h"
#include "recorder/python_frames.h"

namespace ncclrec::recorder::detail {
namespace {

WalkedFrame f(uintptr_t frame, uint32_t offset) { return {frame, frame + 0x1000, offset}; }

std::vector<uintptr_t> stable(std::vector<WalkedFrame> a, bool a_complete,
                              const std::vector<WalkedFrame>& b, bool b_complete) {
  const int n = stableFrames(a.data(), static_cast<int>(a.size()), a_complete, b.data(),
                             static_cast<int>(b.size()), b_complete);
  std::vector<uintptr_t> frames;
  for (int i = 0; i < n; ++i) frames.push_back(a[static_cast<size_t>(i)].frame);
  return frames;
}

TEST(StableFramesTest, AThreadThatStayedPutKeepsEveryFrame) {
  const std::vector<WalkedFrame> walk = {f(0x30, 8), f(0x20, 4), f(0x10, 2)};
  EXPECT_EQ(stable(walk, true, walk, true), (std::vector<uintptr_t>{0x30, 0x20, 0x10}));
}

TEST(StableFramesTest, AThreadThatMovedKeepsTheOuterFramesBothWalksShare) {
  // Between the walks it returned from 0x40 and moved on in 0x30; 0x20 and 0x10 did not change.
  const std::vector<WalkedFrame> first = {f(0x40, 6), f(0x30, 8), f(0x20, 4), f(0x10, 2)};
  const std::vector<WalkedFrame> second = {f(0x30, 10), f(0x20, 4), f(0x10, 2)};
  EXPECT_EQ(stable(first, true, second, true), (std::vector<uintptr_t>{0x20, 0x10}));
}

TEST(StableFramesTest, WalksCutShortByTheDepthBoundKeepTheInnerFramesTheyShare) {
  const std::vector<WalkedFrame> first = {f(0x50, 2), f(0x40, 6), f(0x30, 8)};
  const std::vector<WalkedFrame> second = {f(0x50, 2), f(0x40, 6), f(0x30, 9)};
  EXPECT_EQ(stable(first, false, second, false), (std::vector<uintptr_t>{0x50, 0x40}));
  EXPECT_EQ(stable(first, true, second, false), (std::vector<uintptr_t>{0x50, 0x40}));
}

TEST(StableFramesTest, WalksThatShareNothingKeepNothing) {
  const std::vector<WalkedFrame> first = {f(0x30, 8), f(0x20, 4)};
  const std::vector<WalkedFrame> second = {f(0x70, 8), f(0x60, 4)};
  EXPECT_TRUE(stable(first, true, second, true).empty());
  EXPECT_TRUE(stable(first, true, {}, true).empty());
  // The same frame at the same address but another code object is another frame.
  std::vector<WalkedFrame> reused = first;
  reused[1].code += 8;
  EXPECT_TRUE(stable(first, true, reused, true).empty());
}

}  // namespace
}  // namespace ncclrec::recorder::detail
