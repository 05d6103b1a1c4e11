#include "format/event_context.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <thread>
#include <vector>

#include "format/model.h"

namespace ncclrec::format {
namespace {

EventFields sample(int64_t enqueue, int64_t start, int64_t end) {
  EventFields f;
  f.index = (uint64_t{1} << 48) - 1;
  f.op = OpType::kSend;
  f.op_seq = 123456789;
  f.state = EventState::kStarted;
  f.dtype = 7;
  f.stream = 0x7fff12345678ull;
  f.redop = 3;
  f.comm_id = 0xfedcba9876543210ull;
  f.count = std::numeric_limits<uint64_t>::max();
  f.enqueue_ns = enqueue;
  f.start_ns = start;
  f.end_ns = end;
  f.rank = (1 << 23) - 1;
  f.flags = 0xff;
  f.nranks = 100000;
  f.group_depth = 2;
  f.peer = -(1 << 23);
  f.result = 5;
  f.tid = (1 << 22) + 17;
  f.device = 7;
  f.comm_index = 4;
  f.stack_id = 0xfffffffe;
  return f;
}

void expectSame(const EventFields& a, const EventFields& b) {
  EXPECT_EQ(a.index, b.index);
  EXPECT_EQ(a.op, b.op);
  EXPECT_EQ(a.op_seq, b.op_seq);
  EXPECT_EQ(a.state, b.state);
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.stream, b.stream);
  EXPECT_EQ(a.redop, b.redop);
  EXPECT_EQ(a.comm_id, b.comm_id);
  EXPECT_EQ(a.count, b.count);
  EXPECT_EQ(a.enqueue_ns, b.enqueue_ns);
  EXPECT_EQ(a.start_ns, b.start_ns);
  EXPECT_EQ(a.end_ns, b.end_ns);
  EXPECT_EQ(a.rank, b.rank);
  EXPECT_EQ(a.flags, b.flags);
  EXPECT_EQ(a.nranks, b.nranks);
  EXPECT_EQ(a.group_depth, b.group_depth);
  EXPECT_EQ(a.peer, b.peer);
  EXPECT_EQ(a.result, b.result);
  EXPECT_EQ(a.tid, b.tid);
  EXPECT_EQ(a.device, b.device);
  EXPECT_EQ(a.comm_index, b.comm_index);
  EXPECT_EQ(a.stack_id, b.stack_id);
}

TEST(EventContextTest, EveryFieldRoundTripsAtItsLimits) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  // Real clocks (ns since the epoch), 0 for "not yet", a call that takes hours (start and end in
  // other 2^40 ns windows than the enqueue), and the extremes of a damaged file.
  const int64_t t = 1'700'000'000'123'456'789;
  for (const auto& [enq, start, end] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {t, t + 1, t + 3'600'000'000'000}, {t, 0, 0}, {kMax, kMin, -1}, {0, 0, 0}}) {
    const EventFields f = sample(enq, start, end);
    const EventRecord e(f);
    expectSame(e.fields(), f);
    EXPECT_EQ(e.enqueueNs(), enq);
    EXPECT_EQ(e.startNs(), start);
    EXPECT_EQ(e.endNs(), end);
    EXPECT_EQ(e.commId(), f.comm_id);
    EXPECT_EQ(e.rank(), f.rank);
    EXPECT_EQ(e.peer(), f.peer);
  }
}

TEST(EventContextTest, DefaultRecordIsTheDefaultFields) {
  const EventRecord d;
  expectSame(d.fields(), EventFields{});
  EXPECT_EQ(d, EventRecord(EventFields{}));
}

TEST(EventContextTest, EqualFieldsShareOneContextAndCompareEqual) {
  const EventFields f = sample(5, 6, 7);
  const size_t before = event_contexts::size();
  const EventRecord a(f);
  const EventRecord b(f);
  EXPECT_EQ(a, b);
  EXPECT_EQ(&a.context(), &b.context());
  EXPECT_LE(event_contexts::size(), before + 1);
  EventRecord c = a;
  c.setPeer(3);
  EXPECT_NE(c, a);
  EXPECT_EQ(c.peer(), 3);
  c.setPeer(f.peer);
  EXPECT_EQ(c, a);
}

TEST(EventContextTest, ThreadsInternTheSameContextsToTheSameIds) {
  std::vector<std::vector<EventRecord>> got(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < got.size(); ++t) {
    threads.emplace_back([&got, t] {
      for (int i = 0; i < 70000; ++i) {
        EventFields f;
        f.rank = i % 1000;
        f.stack_id = static_cast<uint32_t>(i / 1000);
        got[t].emplace_back(f);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (size_t t = 1; t < got.size(); ++t) EXPECT_EQ(got[t], got[0]);
  EXPECT_EQ(got[0][1234].rank(), 234);
  EXPECT_EQ(got[0][69999].stackId(), 69u);
}

}  // namespace
}  // namespace ncclrec::format
