#include "recorder/comm_table.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <thread>
#include <vector>

#include "format/bbox_ring.h"
#include "format/op_type.h"

namespace ncclrec::recorder {
namespace {

struct Box {
  explicit Box(uint32_t comms) {
    const auto g = format::computeGeometry(16, comms, 4, 4, 4);
    bytes.resize(g.file_bytes / 8 + 1);
    header = reinterpret_cast<format::BboxHeader*>(bytes.data());
    format::initHeader(header, 16, comms, 4, 4, 4);
  }
  std::vector<uint64_t> bytes;
  format::BboxHeader* header;
};

TEST(CommIds, EqualInputsGiveEqualIds) {
  char a[128] = {1, 2, 3}, b[128] = {1, 2, 3}, c[128] = {1, 2, 4};
  EXPECT_EQ(commIdFromUniqueIds(a, 128), commIdFromUniqueIds(b, 128));
  EXPECT_NE(commIdFromUniqueIds(a, 128), commIdFromUniqueIds(c, 128));
  EXPECT_NE(commIdFromUniqueIds(a, 128), 0u);
  const uint64_t parent = commIdFromUniqueIds(a, 128);
  EXPECT_EQ(commIdForSplit(parent, 0, 1), commIdForSplit(parent, 0, 1));
  EXPECT_NE(commIdForSplit(parent, 0, 1), commIdForSplit(parent, 0, 2));
  EXPECT_NE(commIdForSplit(parent, 0, 1), commIdForSplit(parent, 1, 1));
  const int x1[] = {3, 1}, x2[] = {1, 3}, x3[] = {1, 2};
  EXPECT_EQ(commIdForShrink(parent, 0, x1, 2), commIdForShrink(parent, 0, x2, 2));
  EXPECT_NE(commIdForShrink(parent, 0, x1, 2), commIdForShrink(parent, 0, x3, 2));
}

TEST(CommTable, FailedInitGetsARecordButNoEntryInTheMap) {
  Box box(8);
  CommTable table(box.header, 8);
  CommInfo failed;
  failed.comm_id = 7;
  failed.rank = 2;
  failed.nranks = 1 << 30;  // whatever the caller passed: no counters are made for it
  failed.state = format::kCommInitFailed;
  failed.init_result = 5;
  failed.device.device = 1;
  failed.device.source = format::kDeviceFromCudaContext;
  std::snprintf(failed.device.bus_id, sizeof(failed.device.bus_id), "0000:1b:00.0");
  failed.device.uuid[15] = 0xee;
  CommState* s = table.add(failed);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->send_seq, nullptr);
  EXPECT_EQ(table.find(nullptr), nullptr);
  const format::CommRecord& rec = format::commRecords(box.header)[0];
  EXPECT_EQ(rec.valid, format::kValidMark);
  EXPECT_EQ(rec.handle, 0u);
  EXPECT_EQ(rec.state, format::kCommInitFailed);
  EXPECT_EQ(rec.init_result, 5);
  EXPECT_EQ(rec.device, 1);
  EXPECT_STREQ(rec.bus_id, "0000:1b:00.0");
  EXPECT_EQ(rec.uuid[15], 0xee);
  EXPECT_EQ(rec.device_source, format::kDeviceFromCudaContext);
  // The map is untouched: a real comm added next is found.
  int h = 0;
  CommInfo ok;
  ok.handle = &h;
  ok.comm_id = 8;
  ok.nranks = 2;
  CommState* s2 = table.add(ok);
  EXPECT_EQ(table.find(&h), s2);
  EXPECT_EQ(format::commRecords(box.header)[1].state, format::kCommInitialized);
}

TEST(CommTable, AddFindAndPublishRecord) {
  Box box(8);
  CommTable table(box.header, 8);
  int h1 = 0, h2 = 0;
  CommInfo info;
  info.handle = &h1;
  info.comm_id = 42;
  info.rank = 1;
  info.nranks = 4;
  info.name = "dp";
  CommState* s1 = table.add(info);
  ASSERT_NE(s1, nullptr);
  EXPECT_EQ(table.find(&h1), s1);
  EXPECT_EQ(table.find(&h2), nullptr);
  EXPECT_EQ(table.find(nullptr), nullptr);
  const format::CommRecord& rec = format::commRecords(box.header)[0];
  EXPECT_EQ(rec.valid, format::kValidMark);
  EXPECT_EQ(rec.comm_id, 42u);
  EXPECT_STREQ(rec.name, "dp");
  EXPECT_EQ(box.header->comm_count, 1u);
  // A destroyed comm's address reused by a new comm maps to the new state.
  table.markEnded(s1, format::kCommDestroyed, 5);
  EXPECT_NE(rec.state & format::kCommDestroyed, 0u);
  info.comm_id = 43;
  CommState* s2 = table.add(info);
  EXPECT_EQ(table.find(&h1), s2);
  EXPECT_EQ(s2->comm_id, 43u);
}

TEST(CommTable, FullTableReturnsNull) {
  Box box(2);
  CommTable table(box.header, 2);
  int h[3];
  for (int i = 0; i < 2; ++i) {
    CommInfo info;
    info.handle = &h[i];
    info.nranks = 2;
    EXPECT_NE(table.add(info), nullptr);
  }
  CommInfo info;
  info.handle = &h[2];
  EXPECT_EQ(table.add(info), nullptr);
  EXPECT_EQ(table.find(&h[2]), nullptr);
}

TEST(CommTable, CreationIsOnRecordBeforeTheCallReturns) {
  Box box(4);
  CommTable table(box.header, 4);
  CommInfo info;
  info.comm_id = 0xabc;
  info.rank = 1;
  info.nranks = 4;
  info.created_by = static_cast<uint16_t>(format::OpType::kCommInitRank);
  info.root.family = 2;  // AF_INET
  info.root.port = 4242;
  info.blocking = 0;
  info.event_index = 17;
  const uint32_t record = table.beginCreation(info);
  ASSERT_EQ(record, 0u);
  const format::CommRecord& rec = format::commRecords(box.header)[record];
  // Published with what the call's arguments say, and no outcome yet.
  EXPECT_EQ(rec.valid, format::kValidMark);
  EXPECT_EQ(box.header->comm_count, 1u);
  EXPECT_TRUE(format::commInCreation(rec.state));
  EXPECT_EQ(rec.comm_id, 0xabcu);
  EXPECT_EQ(rec.rank, 1);
  EXPECT_EQ(rec.nranks, 4);
  EXPECT_EQ(rec.root_port, 4242);
  EXPECT_EQ(rec.blocking, 0);
  EXPECT_EQ(rec.event_index_lo, 17u);
  EXPECT_EQ(rec.device, -1);
  EXPECT_EQ(rec.handle, 0u);

  // The call returned: the same record, now with its outcome and kCommInitialized.
  int handle = 0;
  info.handle = &handle;
  info.device.device = 3;
  info.record = record;
  CommState* s = table.add(info);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(box.header->comm_count, 1u);
  EXPECT_EQ(table.find(&handle), s);
  EXPECT_EQ(s->record, &rec);
  EXPECT_FALSE(format::commInCreation(rec.state));
  EXPECT_EQ(rec.state, format::kCommCreating | format::kCommInitialized);
  EXPECT_EQ(rec.handle, reinterpret_cast<uintptr_t>(&handle));
  EXPECT_EQ(rec.device, 3);
}

TEST(CommTable, NonblockingCreationStaysInCreationUntilItSettles) {
  Box box(4);
  CommTable table(box.header, 4);
  CommInfo info;
  info.comm_id = 5;
  info.rank = 0;
  info.nranks = 2;
  const uint32_t record = table.beginCreation(info);
  int handle = 0;
  info.handle = &handle;
  info.record = record;
  info.state = 0;  // ncclInProgress
  CommState* s = table.add(info);
  ASSERT_NE(s, nullptr);
  const format::CommRecord& rec = format::commRecords(box.header)[record];
  EXPECT_TRUE(format::commInCreation(rec.state));
  EXPECT_NE(table.find(&handle), nullptr);  // its ops are recorded meanwhile
  table.settleCreation(s, /*ok=*/false);
  EXPECT_EQ(rec.state, format::kCommCreating | format::kCommInitFailed);
  table.settleCreation(s, /*ok=*/true);  // once only
  EXPECT_EQ(rec.state, format::kCommCreating | format::kCommInitFailed);
}

TEST(CommTable, CreationWithAFullTableClaimsNothing) {
  Box box(1);
  CommTable table(box.header, 1);
  CommInfo info;
  EXPECT_EQ(table.beginCreation(info), 0u);
  EXPECT_EQ(table.beginCreation(info), format::kNoComm);
  int handle = 0;
  info.handle = &handle;
  info.record = format::kNoComm;
  EXPECT_EQ(table.add(info), nullptr);
}

TEST(CommTable, ConcurrentFindsWhileAdding) {
  Box box(256);
  CommTable table(box.header, 256);
  std::vector<int> handles(256);
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done.load()) {
      for (int& h : handles) {
        CommState* s = table.find(&h);
        if (s != nullptr) ASSERT_EQ(s->comm_id, static_cast<uint64_t>(&h - handles.data() + 1));
      }
    }
  });
  for (int i = 0; i < 256; ++i) {
    CommInfo info;
    info.handle = &handles[i];
    info.comm_id = i + 1;
    info.nranks = 2;
    ASSERT_NE(table.add(info), nullptr);
  }
  done = true;
  reader.join();
  for (int i = 0; i < 256; ++i) EXPECT_EQ(table.find(&handles[i])->comm_id, uint64_t(i + 1));
}

}  // namespace
}  // namespace ncclrec::recorder
