#include "analyzer/phrases.h"

#include <gtest/gtest.h>

#include "analyzer/rank_ops.h"

namespace ncclrec::analyzer {
namespace {

using format::EventRecord;
using format::EventState;
using format::OpType;

TEST(PhrasesTest, Words) {
  EXPECT_EQ(ordinal(1), "1st");
  EXPECT_EQ(ordinal(2), "2nd");
  EXPECT_EQ(ordinal(3), "3rd");
  EXPECT_EQ(ordinal(11), "11th");
  EXPECT_EQ(ordinal(13), "13th");
  EXPECT_EQ(ordinal(23), "23rd");
  EXPECT_EQ(ordinal(100), "100th");
  EXPECT_EQ(seconds(2'349'000'000), "2.3s");
  EXPECT_EQ(clockTime(1795861947400000000), "10:32:27.400 UTC");  // 2026-11-28
  EXPECT_EQ(clockTime(0), "-");
  EXPECT_EQ(opNoun(OpType::kAllReduce), "all-reduce");
  EXPECT_EQ(opNoun(OpType::kBcast), "broadcast");
  EXPECT_EQ(opNoun(OpType::kSend), "ncclSend");
}

TEST(PhrasesTest, SubsetCondition) {
  EXPECT_EQ(subsetCondition({0}, {0, 1, 2, 3}), "rank == 0");
  EXPECT_EQ(subsetCondition({0, 1, 2}, {0, 1, 2, 3}), "rank != 3");
  EXPECT_EQ(subsetCondition({0, 2}, {0, 1, 2, 3}), "rank in {0,2}");
}

EventRecord call(OpType op, EventState state, int result = 0) {
  EventRecord e;
  e.op = op;
  e.state = state;
  e.result = result;
  return e;
}

TEST(RankOpsTest, NewestCallsOfEachKind) {
  format::RankData r;
  EXPECT_EQ(newestCommOp(r), nullptr);
  r.events = {call(OpType::kAllReduce, EventState::kEnqueued),
              call(OpType::kSend, EventState::kCompleted),
              call(OpType::kGroupEnd, EventState::kCompleted),
              call(OpType::kCommDestroy, EventState::kCompleted)};
  EXPECT_EQ(newestCommOp(r), &r.events[1]);
  EXPECT_EQ(newestPendingCommOp(r), &r.events[0]);
  EXPECT_EQ(newestPeerCall(r), &r.events[3]);
}

TEST(RankOpsTest, WhatAFailureMeans) {
  EXPECT_TRUE(rejected(call(OpType::kAllReduce, EventState::kFailed, format::kNcclInvalidUsage)));
  EXPECT_FALSE(rejected(call(OpType::kAllReduce, EventState::kFailed, format::kNcclRemoteError)));
  EXPECT_TRUE(lostPeer(call(OpType::kRecv, EventState::kFailed, format::kNcclRemoteError)));
  EXPECT_TRUE(lostPeer(call(OpType::kRecv, EventState::kFailed, format::kNcclSystemError)));
  EXPECT_FALSE(lostPeer(call(OpType::kRecv, EventState::kCompleted)));
  EXPECT_TRUE(unfinished(call(OpType::kRecv, EventState::kStarted)));
  EXPECT_FALSE(isIncomplete(call(OpType::kRecv, EventState::kFailed)));
}

}  // namespace
}  // namespace ncclrec::analyzer
