#include "live/analysis.h"

#include <gtest/gtest.h>

#include "format/bbox_layout.h"
#include "live/rank_convert.h"
#include "live/testing/fixtures.h"

namespace ncclrec::live {
namespace {

using testing::kCommTp;
using testing::kCommWorld;
using testing::kT0;
constexpr int64_t kSecond = 1'000'000'000;

TEST(Analysis, CountsRanksByLiveness) {
  const Snapshot s = testing::hangSnapshot();
  EXPECT_EQ(s.summary.alive, 4);
  EXPECT_EQ(s.summary.exited, 1);
  EXPECT_EQ(s.summary.crashed, 1);
  EXPECT_EQ(s.summary.stale, 0);
}

// After the demo's hang: ranks stopped once they dumped are not counted as crashed; one gone
// without a dump was killed from outside.
TEST(Analysis, TellsStoppedAfterDumpingFromKilledAndCrashed) {
  Snapshot s = testing::stoppedSnapshot();
  EXPECT_EQ(s.summary.stopped, 4);
  EXPECT_EQ(s.summary.crashed, 0);
  EXPECT_EQ(s.summary.killed, 0);
  EXPECT_EQ(livenessName(s.ranks[0].liveness), "stopped");
  s.ranks[1].last_dump_ns = 0;
  s.ranks[1].liveness = goneLiveness(s.ranks[1].last_dump_ns);
  EXPECT_EQ(livenessName(s.ranks[1].liveness), "killed");
  analyze(&s);
  EXPECT_EQ(s.summary.stopped, 3);
  EXPECT_EQ(s.summary.killed, 1);
}

// A rank keeps only what its detail lists: the main thread first, not the recorder's threads, at
// most kThreadsKept threads of at most kThreadFramesKept frames; the counts cover them all.
TEST(Analysis, AThreadsViewKeepsWhatTheDetailLists) {
  std::vector<format::ThreadState> threads;
  for (int tid = 100; tid < 120; ++tid) {
    format::ThreadState t;
    t.tid = tid;
    t.name = tid == 101 ? "ncclrec-watch" : "worker";
    t.status = tid % 2 == 0 ? format::kThreadAnswered : format::kThreadNoAnswer;
    t.frames.resize(tid == 119 ? 100 : 3);
    threads.push_back(std::move(t));
  }
  const auto view = makeThreadsView(119, 42, format::DumpReason::kSnapshot, threads);
  EXPECT_EQ(view->taken_ns, 42);
  EXPECT_EQ(view->reason, format::DumpReason::kSnapshot);
  EXPECT_EQ(view->total, 20u);
  EXPECT_EQ(view->answered, 10u);
  EXPECT_EQ(view->listed, 19u);
  ASSERT_EQ(view->threads.size(), kThreadsKept);
  EXPECT_EQ(view->threads[0].tid, 119);  // the main thread (tid = pid), though last
  EXPECT_EQ(view->threads[0].frames.size(), kThreadFramesKept);
  EXPECT_EQ(view->threads[1].tid, 100);
  EXPECT_EQ(view->threads[2].tid, 102);  // 101 is the recorder's
  EXPECT_EQ(view->threads.back().tid, 107);
}

TEST(Analysis, GroupsCommsAcrossRanksLaggingFirst) {
  const Snapshot s = testing::hangSnapshot();
  ASSERT_EQ(s.comms.size(), 2u);
  const CommGroup& world = s.comms[0];
  EXPECT_EQ(world.comm_id, kCommWorld);
  EXPECT_EQ(world.members.size(), 6u);
  EXPECT_EQ(world.min_issued, 12u);
  EXPECT_EQ(world.max_issued, 13u);
  // Ranks 3 and 4 issued 12; then the ranks waiting in #13 by rank.
  std::vector<int> order;
  for (const CommMember& m : world.members) order.push_back(s.ranks[m.rank].global_rank);
  EXPECT_EQ(order, (std::vector<int>{3, 4, 0, 1, 2, 5}));
  EXPECT_EQ(world.members[2].pending, 13u);
  EXPECT_EQ(world.members[0].pending, 0u);
  EXPECT_EQ(s.comms[1].comm_id, kCommTp);
  EXPECT_EQ(s.comms[1].name, "tp");
  EXPECT_EQ(s.comms[1].members.size(), 2u);
}

// A collective the members wait in, with their transport counters: its connections, the stalled
// one first, named by global ranks, with the steps of the op that arrived.
TEST(Analysis, TheConnectionsOfTheCollectiveTheMembersWaitIn) {
  const Snapshot s = testing::transportSnapshot();
  ASSERT_EQ(s.comms.size(), 1u);
  const CommGroup& g = s.comms[0];
  EXPECT_EQ(g.stuck_seq, 13u);
  ASSERT_EQ(g.connections.size(), 4u);
  const ConnectionView& first = g.connections[0];
  EXPECT_TRUE(first.k.stalled);
  EXPECT_EQ(first.from_rank, 1);
  EXPECT_EQ(first.to_rank, 2);
  EXPECT_EQ(first.k.sent, 52u);
  EXPECT_EQ(first.k.received, 50u);
  EXPECT_EQ(first.k.op_received, 2u);
  EXPECT_EQ(first.k.op_steps, 6u);
  std::vector<std::pair<int, int>> rest;
  for (size_t i = 1; i < g.connections.size(); ++i) {
    EXPECT_FALSE(g.connections[i].k.stalled);
    EXPECT_EQ(g.connections[i].k.op_received, 4u);
    rest.emplace_back(g.connections[i].from_rank, g.connections[i].to_rank);
  }
  EXPECT_EQ(rest, (std::vector<std::pair<int, int>>{{0, 1}, {2, 3}, {3, 0}}));
  // A second later than the sends, nothing is stalled yet: in flight for under a second.
  Snapshot early = s;
  early.now_ns = kT0 + 21 * kSecond;
  analyze(&early);
  ASSERT_EQ(early.comms[0].connections.size(), 4u);
  for (const ConnectionView& c : early.comms[0].connections) EXPECT_FALSE(c.k.stalled);
}

TEST(Analysis, NoCountersNoConnectionsAndNoWaitNoStuckCollective) {
  const Snapshot hang = testing::hangSnapshot();
  EXPECT_EQ(hang.comms[0].stuck_seq, 13u);
  EXPECT_TRUE(hang.comms[0].connections.empty());
  const Snapshot healthy = testing::healthySnapshot();
  ASSERT_FALSE(healthy.comms.empty());
  EXPECT_EQ(healthy.comms[0].stuck_seq, 0u);
  EXPECT_TRUE(healthy.comms[0].connections.empty());
}

TEST(Analysis, LagAndSlowestRank) {
  const Snapshot s = testing::hangSnapshot();
  EXPECT_EQ(s.status[3].lag, 1u);
  EXPECT_EQ(s.status[3].lag_comm, kCommWorld);
  EXPECT_EQ(s.status[3].lag_issued, 12u);
  EXPECT_EQ(s.status[3].lag_max, 13u);
  EXPECT_EQ(s.status[0].lag, 0u);
  // Ranks 3 and 4 both lag by one; rank 4's last call is no older, so the first found stays.
  ASSERT_GE(s.summary.slowest, 0);
  EXPECT_EQ(s.status[size_t(s.summary.slowest)].lag, 1u);
  EXPECT_EQ(s.status[0].oldest_incomplete, 17);  // after 12 + 5 completed
  EXPECT_EQ(s.status[3].oldest_incomplete, -1);
}

TEST(Analysis, HangBannerNamesTheRanksBehind) {
  const Snapshot s = testing::hangSnapshot(60);
  EXPECT_TRUE(s.summary.hang);
  std::vector<int> behind;
  for (size_t i : s.summary.behind) behind.push_back(s.ranks[i].global_rank);
  EXPECT_EQ(behind, (std::vector<int>{3, 4}));
}

TEST(Analysis, NoBannerBeforeTheThreshold) {
  // The ops have waited 80 s and the last progress (rank 5's crash is not progress; the last
  // call entered) was 80 s ago.
  EXPECT_FALSE(testing::hangSnapshot(90).summary.hang);
  EXPECT_TRUE(testing::hangSnapshot(79).summary.hang);
}

TEST(Analysis, HealthyJobHasNoHangAndTheLastToArriveIsSlowest) {
  const Snapshot s = testing::healthySnapshot();
  EXPECT_FALSE(s.summary.hang);
  EXPECT_EQ(s.summary.alive, 2);
  EXPECT_EQ(s.status[0].lag, 0u);
  EXPECT_GE(s.summary.slowest, 0);
}

TEST(Analysis, EveryoneWaitingAndNoneBehindNamesTheWaiters) {
  Snapshot s;
  s.now_ns = kT0 + 100 * kSecond;
  s.hang_after_s = 10;
  for (int r = 0; r < 3; ++r)
    s.ranks.push_back(entryFromRankData(testing::makeRank(r, 3, "h", 7, 4, 1)));
  analyze(&s);
  ASSERT_TRUE(s.summary.hang);
  EXPECT_EQ(s.summary.behind.size(), 3u);
}

TEST(Analysis, OneConversionOfACallShiftsOnlyTheTimesItReached) {
  format::EventFields f;
  f.index = 12;
  f.op = format::OpType::kSend;
  f.state = format::EventState::kStarted;
  f.comm_id = 0xabc;
  f.op_seq = 5;
  f.count = 64;
  f.dtype = 7;
  f.peer = 3;
  f.stack_id = 9;
  f.enqueue_ns = 1000;
  f.start_ns = 1500;
  const OpView op = opViewOf(f, 250);
  EXPECT_EQ(op.index, 12u);
  EXPECT_EQ(op.op, format::OpType::kSend);
  EXPECT_TRUE(op.incomplete());
  EXPECT_EQ(op.comm_id, 0xabcu);
  EXPECT_EQ(op.op_seq, 5u);
  EXPECT_EQ(op.peer, 3);
  EXPECT_EQ(op.stack_id, 9u);
  EXPECT_EQ(op.enqueue_ns, 1250);
  EXPECT_EQ(op.start_ns, 1750);
  EXPECT_EQ(op.end_ns, 0);  // not reached: no shift
  EXPECT_EQ(opViewOf(f).enqueue_ns, 1000);
}

TEST(Analysis, ADeadRankIsBehindWhenNoneLags) {
  Snapshot s;
  s.now_ns = kT0 + 100 * kSecond;
  s.hang_after_s = 10;
  for (int r = 0; r < 3; ++r)
    s.ranks.push_back(entryFromRankData(testing::makeRank(r, 3, "h", 7, 4, 1)));
  s.ranks[2].liveness = Liveness::kGone;
  analyze(&s);
  ASSERT_TRUE(s.summary.hang);
  ASSERT_EQ(s.summary.behind.size(), 1u);
  EXPECT_EQ(s.summary.behind[0], 2u);
}

TEST(Analysis, AJobWhoseRanksAllExitedIsNotHung) {
  Snapshot s;
  s.now_ns = kT0 + 1000 * kSecond;
  s.hang_after_s = 10;
  for (int r = 0; r < 2; ++r) {
    format::RankData d = testing::makeRank(r, 2, "h", 7, 4, 1);
    d.exited = true;
    s.ranks.push_back(entryFromRankData(d));
  }
  analyze(&s);
  EXPECT_FALSE(s.summary.hang);
  EXPECT_EQ(s.summary.exited, 2);
}

TEST(Analysis, AClosedCommDoesNotMakeItsRankLag) {
  Snapshot s;
  s.now_ns = kT0 + 100 * kSecond;
  format::RankData a = testing::makeRank(0, 2, "h", 7, 10, 0);
  format::RankData b = testing::makeRank(1, 2, "h", 7, 8, 0);
  b.comms[0].state |= format::kCommDestroyed;
  s.ranks.push_back(entryFromRankData(a));
  s.ranks.push_back(entryFromRankData(b));
  analyze(&s);
  EXPECT_EQ(s.status[1].lag, 0u);
}

TEST(Analysis, AFailedInitIsNoCommunicator) {
  Snapshot s;
  s.now_ns = kT0;
  format::RankData a = testing::makeRank(0, 1, "h", 7, 1, 0);
  format::Comm failed;
  failed.comm_id = 99;
  failed.state = format::kCommInitFailed;
  a.comms.push_back(failed);
  s.ranks.push_back(entryFromRankData(a));
  analyze(&s);
  ASSERT_EQ(s.comms.size(), 1u);
  EXPECT_EQ(s.comms[0].comm_id, 7u);
}

TEST(Analysis, FocusOpAndStack) {
  const Snapshot s = testing::hangSnapshot();
  EXPECT_EQ(focusOp(s.ranks[0], s.status[0]), 17);
  EXPECT_EQ(focusOp(s.ranks[3], s.status[3]), 11);  // its last call
  const format::Stack* st = stackOf(s.ranks[0], s.ranks[0].history->ops[17]);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(st->frames.size(), 3u);
  EXPECT_EQ(focusStackRows(s.ranks[0], s.status[0]), 3);
}

TEST(Analysis, AgeSeconds) {
  EXPECT_DOUBLE_EQ(ageSeconds(10 * kSecond, 4 * kSecond), 6.0);
  EXPECT_DOUBLE_EQ(ageSeconds(10 * kSecond, 0), 0.0);             // unknown
  EXPECT_DOUBLE_EQ(ageSeconds(10 * kSecond, 11 * kSecond), 0.0);  // another clock ahead
}

TEST(Analysis, SymbolKeyUsesTheModuleBaseName) {
  EXPECT_EQ(symbolKey("/a/b/libx.so", 0x10), "libx.so+16");
  EXPECT_EQ(symbolKey("train", 1), "train+1");
}

}  // namespace
}  // namespace ncclrec::live
