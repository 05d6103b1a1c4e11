#include "metrics/op_counter.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "format/testing/bbox_builder.h"
#include "format/testing/temp_dir.h"
#include "live/testing/live_bbox.h"

namespace ncclrec::metrics {
namespace {

using format::EventState;
using format::OpType;
using format::testing::BboxBuilder;
using format::testing::makeCollective;
using format::testing::TempDir;
using live::testing::LiveBbox;

constexpr uint64_t kComm = 0xc0ffee0000000001ull;
constexpr int64_t kNow = 1'700'000'100'000'000'000;

struct Fixture {
  TempDir dir;
  std::string path = dir.path() + "/host.1.bbox";
  std::unique_ptr<LiveBbox> box;
  std::vector<TimedOp> timed;
  explicit Fixture(uint32_t ring = 16) {
    format::testing::BboxCapacities caps;
    caps.ring = ring;
    BboxBuilder b(caps);
    b.header()->pid = 1;
    b.header()->global_rank = 0;
    box = LiveBbox::create(path, b);
  }
  std::unique_ptr<OpCounter> open() {
    auto c = OpCounter::open(path);
    EXPECT_TRUE(c.ok()) << c.status().message();
    return c.ok() ? std::move(c).value() : nullptr;
  }
  void update(OpCounter& c) {
    c.update([this](const TimedOp& op) { timed.push_back(op); });
  }
};

format::Event op(OpType type, uint64_t seq, EventState state = EventState::kCompleted) {
  format::Event e = makeCollective(type, kComm, 0, 4, seq, 1024, kNow + int64_t(seq) * 1000);
  e.state = static_cast<uint8_t>(state);
  if (state != EventState::kCompleted) e.end_ns = 0;
  return e;
}

TEST(OpCounterTest, CountsCallsAndCompletionsByOpAndCommunicator) {
  Fixture f;
  ASSERT_NE(f.box, nullptr);
  f.box->addEvent(op(OpType::kAllReduce, 1));
  f.box->addEvent(op(OpType::kAllReduce, 2));
  f.box->addEvent(op(OpType::kBroadcast, 3));
  format::Event init{};
  init.op = static_cast<uint16_t>(OpType::kGetUniqueId);
  init.state = static_cast<uint8_t>(EventState::kCompleted);
  f.box->addEvent(init);  // no communicator
  auto c = f.open();
  ASSERT_NE(c, nullptr);
  f.update(*c);
  const OpCounts& n = c->counts();
  EXPECT_EQ(n.events, 4u);
  EXPECT_EQ(n.uncounted, 0u);
  EXPECT_EQ((n.calls.at({kComm, OpType::kAllReduce})), 2u);
  EXPECT_EQ((n.calls.at({kComm, OpType::kBroadcast})), 1u);
  EXPECT_EQ((n.calls.at({0, OpType::kGetUniqueId})), 1u);
  EXPECT_EQ((n.completed.at({kComm, OpType::kAllReduce})), 2u);
  // The three collectives are timed (1.5 ms each, 1024 float32), the unique id is not.
  ASSERT_EQ(f.timed.size(), 3u);
  EXPECT_EQ(f.timed[0].op, OpType::kAllReduce);
  EXPECT_DOUBLE_EQ(f.timed[0].bytes, 4096);
  EXPECT_DOUBLE_EQ(f.timed[0].seconds, 0.0015);
  // Nothing new: nothing counted twice.
  f.update(*c);
  EXPECT_EQ((c->counts().calls.at({kComm, OpType::kAllReduce})), 2u);
  EXPECT_EQ(f.timed.size(), 3u);
}

TEST(OpCounterTest, AnOpReadIncompleteIsCountedWhenItCompletes) {
  Fixture f;
  const uint64_t i = f.box->addEvent(op(OpType::kAllReduce, 1, EventState::kEnqueued));
  auto c = f.open();
  f.update(*c);
  EXPECT_EQ((c->counts().calls.at({kComm, OpType::kAllReduce})), 1u);
  EXPECT_FALSE(c->counts().completed.contains({kComm, OpType::kAllReduce}));
  EXPECT_TRUE(f.timed.empty());
  format::Event* slot = f.box->slot(i);
  slot->end_ns = slot->enqueue_ns + 2'000'000;
  slot->state = static_cast<uint8_t>(EventState::kCompleted);
  f.update(*c);
  EXPECT_EQ((c->counts().completed.at({kComm, OpType::kAllReduce})), 1u);
  ASSERT_EQ(f.timed.size(), 1u);
  EXPECT_DOUBLE_EQ(f.timed[0].seconds, 0.002);
  f.update(*c);
  EXPECT_EQ((c->counts().completed.at({kComm, OpType::kAllReduce})), 1u);
}

TEST(OpCounterTest, AFailedOpIsCalledNotCompleted) {
  Fixture f;
  const uint64_t i = f.box->addEvent(op(OpType::kAllReduce, 1, EventState::kEnqueued));
  auto c = f.open();
  f.update(*c);
  f.box->slot(i)->state = static_cast<uint8_t>(EventState::kFailed);
  f.update(*c);
  EXPECT_FALSE(c->counts().completed.contains({kComm, OpType::kAllReduce}));
  EXPECT_TRUE(f.timed.empty());
}

TEST(OpCounterTest, EventsThatLeftTheRingBeforeBeingReadAreUncounted) {
  Fixture f(16);
  for (uint64_t s = 1; s <= 40; ++s) f.box->addEvent(op(OpType::kAllReduce, s));
  auto c = f.open();
  f.update(*c);
  EXPECT_EQ(c->counts().events, 40u);
  EXPECT_EQ(c->counts().uncounted, 24u);
  EXPECT_EQ((c->counts().calls.at({kComm, OpType::kAllReduce})), 16u);
  // Read every 16 or fewer: nothing more is lost.
  for (uint64_t s = 41; s <= 50; ++s) f.box->addEvent(op(OpType::kAllReduce, s));
  f.update(*c);
  EXPECT_EQ(c->counts().uncounted, 24u);
  EXPECT_EQ((c->counts().calls.at({kComm, OpType::kAllReduce})), 26u);
}

TEST(OpCounterTest, ASlotBeingWrittenIsReadOnceItIsPublished) {
  Fixture f;
  f.box->addEvent(op(OpType::kAllReduce, 1));
  const uint64_t i = f.box->beginEvent(op(OpType::kAllReduce, 2));
  auto c = f.open();
  f.update(*c);
  EXPECT_EQ((c->counts().calls.at({kComm, OpType::kAllReduce})), 1u);
  f.box->publish(i);
  f.update(*c);
  EXPECT_EQ((c->counts().calls.at({kComm, OpType::kAllReduce})), 2u);
  EXPECT_EQ(c->counts().uncounted, 0u);
}

TEST(OpCounterTest, AnOpCapturedIntoAGraphIsCountedNotTimed) {
  Fixture f;
  format::Event e = op(OpType::kAllReduce, 1);
  e.flags |= format::kEventGraphCaptured;
  f.box->addEvent(e);
  auto c = f.open();
  f.update(*c);
  EXPECT_EQ((c->counts().completed.at({kComm, OpType::kAllReduce})), 1u);
  EXPECT_TRUE(f.timed.empty());
}

TEST(OpCounterTest, WhatIsNotABlackBoxFailsNamingTheFile) {
  TempDir dir;
  const std::string path = dir.path() + "/x.bbox";
  std::ofstream(path) << std::string(8192, 'x');
  auto c = OpCounter::open(path);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), path + ": not an ncclrec black box (bad magic)");
  bool starting = false;
  std::ofstream(dir.path() + "/new.bbox") << "";
  EXPECT_FALSE(OpCounter::open(dir.path() + "/new.bbox", &starting).ok());
  EXPECT_TRUE(starting);
  EXPECT_FALSE(OpCounter::open(dir.path() + "/missing.bbox").ok());
}

}  // namespace
}  // namespace ncclrec::metrics
