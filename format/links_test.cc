// The black box's link table (bbox_layout.h LinkRecord, bbox_links.h): claiming, counting,
// reading back into the model, and through a dump.
#include "format/links.h"

#include <gtest/gtest.h>

#include <set>
#include <thread>
#include <vector>

#include "format/bbox_links.h"
#include "format/dump_io.h"
#include "format/reader.h"
#include "format/testing/bbox_builder.h"

namespace ncclrec::format {
namespace {

using testing::BboxBuilder;
using testing::BboxCapacities;

constexpr uint64_t kComm = 0x1234567890abcdefull;

BboxBuilder withLinks(uint32_t slots) {
  BboxCapacities caps;
  caps.links = slots;
  BboxBuilder b(caps);
  CommRecord c{};
  c.comm_id = kComm;
  c.rank = 2;
  c.nranks = 4;
  c.state = kCommInitialized;
  b.addComm(c);
  return b;
}

TEST(LinkTable, OneRecordPerConnectionClaimedOnFirstUse) {
  BboxBuilder b = withLinks(16);
  BboxHeader* h = b.header();
  LinkRecord* send3 = findOrClaimLink(h, 0, 0, 3, true);
  ASSERT_NE(send3, nullptr);
  EXPECT_EQ(findOrClaimLink(h, 0, 0, 3, true), send3);
  std::set<LinkRecord*> distinct{
      send3, findOrClaimLink(h, 0, 0, 3, false), findOrClaimLink(h, 0, 1, 3, true),
      findOrClaimLink(h, 1, 0, 3, true), findOrClaimLink(h, 0, 0, 1, true)};
  EXPECT_EQ(distinct.size(), 5u);
  EXPECT_EQ(distinct.count(nullptr), 0u);
  EXPECT_EQ(h->link_count, 5u);
  EXPECT_EQ(h->links_dropped, 0u);
}

TEST(LinkTable, AFullTableCountsWhatItDrops) {
  BboxBuilder b = withLinks(2);
  BboxHeader* h = b.header();
  EXPECT_NE(findOrClaimLink(h, 0, 0, 1, true), nullptr);
  EXPECT_NE(findOrClaimLink(h, 0, 0, 2, true), nullptr);
  EXPECT_EQ(findOrClaimLink(h, 0, 0, 3, true), nullptr);
  EXPECT_EQ(findOrClaimLink(h, 0, 0, 1, true)->peer, 1);  // the claimed ones are still found
  EXPECT_EQ(h->links_dropped, 1u);
  BboxBuilder none = withLinks(0);
  EXPECT_EQ(findOrClaimLink(none.header(), 0, 0, 1, true), nullptr);
}

// The communicator's kernel record: ops launched and their kernel channels started and stopped,
// read back as a Link that is no connection.
TEST(LinkTable, TheKernelRecordCountsLaunchedOpsAndTheirChannels) {
  BboxBuilder b = withLinks(16);
  BboxHeader* h = b.header();
  LinkRecord* k = findOrClaimKernelRecord(h, 0);
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(findOrClaimKernelRecord(h, 0), k);
  EXPECT_NE(findOrClaimLink(h, 0, 0, 1, false), k);  // the receive from rank 1 is another record
  kernelOpLaunched(k, 7, 2, 100);
  kernelChannelStarted(k, 110);
  kernelChannelStarted(k, 111);
  kernelChannelStopped(k, 120);
  kernelChannelStopped(k, 121);
  kernelOpLaunched(k, 9, 2, 200);  // the next op: one channel started, none stopped
  kernelChannelStarted(k, 210);
  std::vector<Link> links = readLinks(*h, {Comm{.index = 0, .comm_id = kComm}});
  ASSERT_EQ(links.size(), 2u);
  const Link& kernel = links[0].isKernel() ? links[0] : links[1];
  ASSERT_TRUE(kernel.isKernel());
  EXPECT_FALSE((links[0].isKernel() ? links[1] : links[0]).isKernel());
  EXPECT_EQ(kernel.comm_id, kComm);
  EXPECT_EQ(kernel.op_index, 9u);
  EXPECT_EQ(kernel.op_steps, 2u);
  EXPECT_EQ(kernel.opSteps(kernel.posted), 1u);
  EXPECT_EQ(kernel.opSteps(kernel.done), 0u);
  EXPECT_EQ(kernel.op_start_ns, 200);
  EXPECT_EQ(kernel.posted_ns, 210);
}

TEST(LinkTable, ThreadsRacingForOneConnectionShareItsCounts) {
  BboxBuilder b = withLinks(64);
  BboxHeader* h = b.header();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([h] {
      for (int i = 0; i < 1000; ++i) linkStepDone(findOrClaimLink(h, 0, 0, 1, true), 5);
    });
  }
  for (std::thread& t : threads) t.join();
  const base::StatusOr<RankData> parsed = parseBlackBox(b.data(), b.size(), "race.bbox");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  ASSERT_EQ(parsed->links.size(), 1u);  // records of one key, if any race made two, added up
  EXPECT_EQ(parsed->links[0].done, 4000u);
}

TEST(LinkTable, CountersReadBackPerOpThroughADump) {
  BboxBuilder b = withLinks(16);
  BboxHeader* h = b.header();
  LinkRecord* send = findOrClaimLink(h, 0, 1, 3, true);
  LinkRecord* recv = findOrClaimLink(h, 0, 1, 1, false);
  // An earlier op of 4 steps, all done; then op #6 (ring index 9) of 6 steps: 5 posted, 4 sent,
  // 3 done; the receive side of #6 posted everything and received 2.
  linkOpStarted(send, 8, 4, 100);
  linkOpStarted(recv, 8, 4, 100);
  for (int i = 0; i < 4; ++i) {
    for (LinkRecord* r : {send, recv}) {
      linkStepPosted(r, 110);
      linkStepMoved(r, 120);
      linkStepDone(r, 130);
    }
  }
  linkOpStarted(send, 9, 6, 200);
  linkOpStarted(recv, 9, 6, 201);
  for (int i = 0; i < 6; ++i) {
    if (i < 5) linkStepPosted(send, 210 + i);
    if (i < 4) linkStepMoved(send, 220 + i);
    if (i < 3) linkStepDone(send, 230 + i);
    linkStepPosted(recv, 240);
    if (i < 2) {
      linkStepMoved(recv, 250 + i);
      linkStepDone(recv, 260 + i);
    }
  }
  const base::StatusOr<RankData> parsed = parseBlackBox(b.data(), b.size(), "links.bbox");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  const std::vector<Link>& links = parsed->links;
  ASSERT_EQ(links.size(), 2u);
  const Link& r = links[0];  // (comm 0, channel 1, peer 1, receive) sorts first
  const Link& s = links[1];
  EXPECT_FALSE(r.is_send);
  EXPECT_TRUE(s.is_send);
  EXPECT_EQ(s.comm_id, kComm);
  EXPECT_EQ(s.channel, 1);
  EXPECT_EQ(s.peer, 3);
  EXPECT_EQ(s.op_index, 9u);
  EXPECT_EQ(s.op_steps, 6u);
  EXPECT_EQ(s.planned, 10u);
  EXPECT_EQ(s.opSteps(s.posted), 5u);
  EXPECT_EQ(s.opSteps(s.moved), 4u);
  EXPECT_EQ(s.opSteps(s.done), 3u);
  EXPECT_EQ(s.moved_ns, 223);
  EXPECT_EQ(s.op_start_ns, 200);
  EXPECT_EQ(r.opSteps(r.posted), 6u);
  EXPECT_EQ(r.opSteps(r.moved), 2u);
  EXPECT_EQ(r.moved_ns, 251);
  // Through a dump, unchanged.
  const RankData back = fromProto(toProto(*parsed));
  EXPECT_EQ(back.links, links);
}

TEST(LinkTable, StepsOfAnOpThatHasNotReachedItsBaseCountZero) {
  Link l;
  l.op_steps = 4;
  l.op_base = 10;
  EXPECT_EQ(l.opSteps(8), 0u);  // the previous op's steps still moving
  EXPECT_EQ(l.opSteps(12), 2u);
  EXPECT_EQ(l.opSteps(19), 4u);  // never more than the op has
  l.op_base = 0xfffffffe;        // the 32-bit base wrapped
  EXPECT_EQ(l.opSteps(0x100000001ull), 3u);
}

TEST(LinkTable, TwoRecordsOfOneConnectionAddUp) {
  Link a, b;
  a.planned = 10, a.posted = 9, a.moved = 8, a.done = 7, a.op_steps = 4, a.op_start_ns = 5;
  a.moved_ns = 50;
  b.planned = 4, b.posted = 4, b.moved = 3, b.done = 1, b.op_steps = 2, b.op_start_ns = 6;
  b.op_index = 7, b.moved_ns = 40;
  mergeLink(&a, b);
  EXPECT_EQ(a.posted, 13u);
  EXPECT_EQ(a.done, 8u);
  EXPECT_EQ(a.op_index, 7u);  // the op that started last
  EXPECT_EQ(a.op_steps, 2u);
  EXPECT_EQ(a.opSteps(a.planned), 2u);
  EXPECT_EQ(a.moved_ns, 50);
}

TEST(LinkTable, ACorruptTableGeometryIsRejected) {
  BboxBuilder b = withLinks(4);
  b.header()->link_bytes = 95;
  const base::StatusOr<RankData> parsed = parseBlackBox(b.data(), b.size(), "bad.bbox");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("bad.bbox: corrupt black box header (link table)"),
            std::string::npos)
      << parsed.status().message();
}

}  // namespace
}  // namespace ncclrec::format
