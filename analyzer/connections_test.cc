#include "analyzer/connections.h"

#include <gtest/gtest.h>

namespace ncclrec::analyzer {
namespace {

constexpr uint64_t kComm = 0xc0ffee0000000001ull;
constexpr uint64_t kOther = 0xbeef000000000002ull;
constexpr int64_t kT = 1'700'000'000'000'000'000;
constexpr int64_t kSecond = 1'000'000'000;

format::Link link(uint64_t comm, int peer, bool send, uint64_t moved, int64_t moved_ns) {
  format::Link l;
  l.comm_id = comm;
  l.peer = peer;
  l.is_send = send;
  l.moved = moved;
  l.moved_ns = moved_ns;
  l.op_index = 7;
  l.op_steps = 4;
  l.op_base = 8;
  l.planned = 12;
  return l;
}

// Two ranks: 0 sends to 1 on two communicators; only kComm's connection counts, its ends paired
// by (from, to, channel), the op's steps taken only from a receiver waiting in that very op.
TEST(Connections, PairsTheTwoEndsOfEachConnectionOfOneCommunicator) {
  const std::vector<format::Link> r0 = {link(kComm, 1, true, 11, kT), link(kOther, 1, true, 3, kT)};
  const std::vector<format::Link> r1 = {link(kComm, 0, false, 9, kT - kSecond / 2)};
  std::vector<Connection> c = connectionsOf(kComm, {{0, &r0, 5}, {1, &r1, 7}}, kT + 2 * kSecond);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].from, 0);
  EXPECT_EQ(c[0].to, 1);
  EXPECT_EQ(c[0].from_end, 0u);
  EXPECT_EQ(c[0].to_end, 1u);
  EXPECT_EQ(c[0].sent, 11u);
  EXPECT_EQ(c[0].received, 9u);
  EXPECT_EQ(c[0].op_steps, 4u);
  EXPECT_EQ(c[0].op_received, 1u);  // 9 moved, 8 before the op
  EXPECT_TRUE(c[0].stalled);
  // The receiver waits in another op: its newest proxy op's steps are not that op's.
  c = connectionsOf(kComm, {{0, &r0, 5}, {1, &r1, 6}}, kT + 2 * kSecond);
  EXPECT_EQ(c[0].op_steps, 0u);
  // No op to wait in: not matched either, even against a link with no op.
  std::vector<format::Link> no_op = r1;
  no_op[0].op_index = format::kNoLinkOp;
  c = connectionsOf(kComm, {{0, &r0, 5}, {1, &no_op, format::kNoLinkOp}}, kT + 2 * kSecond);
  EXPECT_EQ(c[0].op_steps, 0u);
}

TEST(Connections, StalledNeedsBothEndsAndASecondOfSilence) {
  const std::vector<format::Link> r0 = {link(kComm, 1, true, 11, kT)};
  const std::vector<format::Link> r1 = {link(kComm, 0, false, 9, kT)};
  // Under a second since the last send: in flight.
  EXPECT_FALSE(connectionsOf(kComm, {{0, &r0, 5}, {1, &r1, 7}}, kT + kSecond / 2)[0].stalled);
  EXPECT_TRUE(connectionsOf(kComm, {{0, &r0, 5}, {1, &r1, 7}}, kT + kSecond)[0].stalled);
  // Only the sender recorded (the receiver had no counters): known, never called stalled.
  const std::vector<Connection> one =
      connectionsOf(kComm, {{0, &r0, 5}, {1, nullptr, 7}}, kT + 9 * kSecond);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_TRUE(one[0].has_send);
  EXPECT_FALSE(one[0].has_recv);
  EXPECT_EQ(one[0].to_end, SIZE_MAX);
  EXPECT_FALSE(one[0].stalled);
  // Everything received: not stalled however long the wait.
  const std::vector<format::Link> all = {link(kComm, 0, false, 11, kT)};
  EXPECT_FALSE(connectionsOf(kComm, {{0, &r0, 5}, {1, &all, 7}}, kT + 60 * kSecond)[0].stalled);
}

}  // namespace
}  // namespace ncclrec::analyzer
