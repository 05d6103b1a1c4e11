#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "format/bbox_layout.h"
#include "format/reader.h"
#include "format/testing/bbox_builder.h"
#include "format/testing/temp_dir.h"

namespace ncclrec::format {
namespace {

using testing::BboxBuilder;
using testing::BboxCapacities;
using testing::makeCollective;

constexpr uint64_t kComm = 0xabcdef0123456789ull;
constexpr uint64_t kLibBase = 0x7f0000000000ull;

// A small process: identity, one comm, a module, a stack and four events.
BboxBuilder makeProcess() {
  BboxBuilder b;
  BboxHeader* h = b.header();
  h->pid = 4242;
  h->global_rank = 3;
  h->world_size = 8;
  h->local_rank = 1;
  std::strcpy(h->host, "node7");
  std::strcpy(h->run_id, "run-1");
  std::strcpy(h->exe, "/usr/bin/python3");
  h->start_realtime_ns = 1'000;
  h->heartbeat_ns = 9'000'000'000;
  h->fatal_signal = 11;
  h->fatal_ns = 9'500'000'000;
  h->completion_mode = 1;
  h->hang_event_index = 3;
  h->stacks_dropped = 2;

  CommRecord c{};
  c.comm_id = kComm;
  c.parent_id = 7;
  c.handle = 0x5555;
  c.rank = 3;
  c.nranks = 8;
  c.device = 1;
  c.global_rank = 3;
  c.color = -1;
  c.key = -1;
  c.created_by = static_cast<uint32_t>(OpType::kCommInitRank);
  c.coll_seq = 2;
  c.state = kCommInitialized;
  c.created_ns = 2'000;
  std::strcpy(c.name, "world");
  std::strcpy(c.bus_id, "0000:3b:00.0");
  for (uint8_t i = 0; i < 16; ++i) c.uuid[i] = static_cast<uint8_t>(0xa0 + i);
  c.device_source = kDeviceFromComm;
  b.addComm(c);

  b.addModule("/opt/app/libtrain.so", kLibBase, 0x100000, {0xde, 0xad, 0xbe, 0xef, 0x01});
  b.addStack({kLibBase + 0x1234, kLibBase + 0x2000, 0x400123});

  Event init{};
  init.op = static_cast<uint16_t>(OpType::kCommInitRank);
  init.comm_id = kComm;
  init.rank = 3;
  init.nranks = 8;
  init.dtype = 0xff;
  init.redop = -1;
  init.peer = -1;
  init.state = static_cast<uint8_t>(EventState::kCompleted);
  init.stack_id = kNoStack;
  init.comm_index = 0;
  init.aux64 = kComm;
  b.addEvent(init);
  Event ar = makeCollective(OpType::kAllReduce, kComm, 3, 8, 1, 1024, 3'000'000'000);
  ar.stack_id = 0;
  ar.comm_index = 0;
  b.addEvent(ar);
  Event bc = makeCollective(OpType::kBroadcast, kComm, 3, 8, 2, 16, 4'000'000'000);
  bc.peer = 0;
  bc.dtype = 9;
  b.addEvent(bc);
  Event hung = makeCollective(OpType::kAllReduce, kComm, 3, 8, 3, 4096, 5'000'000'000);
  hung.end_ns = 0;
  hung.state = static_cast<uint8_t>(EventState::kStarted);
  hung.flags = kEventCudaTimed;
  b.addEvent(hung);
  return b;
}

TEST(BboxReaderTest, ParsesSyntheticBlackBox) {
  BboxBuilder b = makeProcess();
  base::StatusOr<RankData> r = parseBlackBox(b.data(), b.size(), "mem.bbox");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const RankData& d = *r;
  EXPECT_EQ(d.source_path, "mem.bbox");
  EXPECT_EQ(d.source, SourceKind::kBlackBox);
  EXPECT_EQ(d.format_version, kBboxVersion);
  EXPECT_EQ(d.pid, 4242);
  EXPECT_EQ(d.global_rank, 3);
  EXPECT_EQ(d.world_size, 8);
  EXPECT_EQ(d.local_rank, 1);
  EXPECT_EQ(d.host, "node7");
  EXPECT_EQ(d.run_id, "run-1");
  EXPECT_EQ(d.exe, "/usr/bin/python3");
  EXPECT_EQ(d.start_ns, 1'000);
  EXPECT_EQ(d.heartbeat_ns, 9'000'000'000);
  EXPECT_FALSE(d.exited);
  EXPECT_EQ(d.fatal_signal, 11);
  EXPECT_EQ(d.fatal_ns, 9'500'000'000);
  EXPECT_TRUE(d.cuda_completion);
  EXPECT_EQ(d.hang_event_index, 3);
  EXPECT_EQ(d.stacks_dropped, 2u);
  EXPECT_EQ(d.dump_reason, DumpReason::kNone);

  EXPECT_EQ(d.events_total, 4u);
  EXPECT_EQ(d.events_lost, 0u);
  ASSERT_EQ(d.events.size(), 4u);
  for (size_t i = 0; i < d.events.size(); ++i) EXPECT_EQ(d.events[i].index, i);
  EXPECT_EQ(d.events[0].op, OpType::kCommInitRank);
  EXPECT_EQ(d.events[0].dtype, -1);   // 0xff in the file
  ASSERT_EQ(d.event_aux.size(), 1u);  // only the init call has an aux word
  EXPECT_EQ(d.event_aux[0], (EventAux{0, 0, 0, kComm}));
  const EventRecord& ar = d.events[1];
  EXPECT_EQ(ar.op, OpType::kAllReduce);
  EXPECT_EQ(ar.commId(), kComm);
  EXPECT_EQ(ar.rank(), 3);
  EXPECT_EQ(ar.nranks(), 8);
  EXPECT_EQ(ar.op_seq, 1u);
  EXPECT_EQ(ar.count, 1024u);
  EXPECT_EQ(ar.dtype, 7);
  EXPECT_EQ(ar.redop, 0);
  EXPECT_EQ(ar.stackId(), 0u);
  EXPECT_EQ(ar.commIndex(), 0u);
  EXPECT_EQ(ar.state, EventState::kCompleted);
  EXPECT_EQ(ar.endNs() - ar.startNs(), 1'500'000);
  EXPECT_EQ(d.events[2].peer(), 0);
  EXPECT_EQ(d.events[2].dtype, 9);
  EXPECT_EQ(d.events[3].state, EventState::kStarted);
  EXPECT_EQ(d.events[3].endNs(), 0);
  EXPECT_EQ(d.events[3].flags, kEventCudaTimed);

  ASSERT_EQ(d.comms.size(), 1u);
  const Comm& c = d.comms[0];
  EXPECT_EQ(c.index, 0u);
  EXPECT_EQ(c.comm_id, kComm);
  EXPECT_EQ(c.parent_id, 7u);
  EXPECT_EQ(c.handle, 0x5555u);
  EXPECT_EQ(c.rank, 3);
  EXPECT_EQ(c.nranks, 8);
  EXPECT_EQ(c.device, 1);
  EXPECT_EQ(c.created_by, OpType::kCommInitRank);
  EXPECT_EQ(c.coll_seq, 2u);
  EXPECT_EQ(c.state, kCommInitialized);
  EXPECT_EQ(c.name, "world");
  EXPECT_EQ(c.bus_id, "0000:3b:00.0");
  EXPECT_EQ(c.uuid, "GPU-a0a1a2a3-a4a5-a6a7-a8a9-aaabacadaeaf");
  EXPECT_EQ(c.device_source, kDeviceFromComm);

  ASSERT_EQ(d.modules.size(), 1u);
  EXPECT_EQ(d.modules[0].path, "/opt/app/libtrain.so");
  EXPECT_EQ(d.modules[0].base, kLibBase);
  EXPECT_EQ(d.modules[0].size, 0x100000u);
  EXPECT_EQ(d.modules[0].build_id, "deadbeef01");

  ASSERT_EQ(d.stacks.size(), 1u);
  const Stack& s = d.stacks.at(0);
  EXPECT_EQ(s.id, 0u);
  EXPECT_FALSE(s.symbolized);
  ASSERT_EQ(s.frames.size(), 3u);
  EXPECT_EQ(s.frames[0].address, kLibBase + 0x1234);
  EXPECT_EQ(s.frames[0].module, "/opt/app/libtrain.so");
  EXPECT_EQ(s.frames[0].module_offset, 0x1234u);
  EXPECT_EQ(s.frames[1].module_offset, 0x2000u);
  EXPECT_EQ(s.frames[2].module, "");  // outside every module
  EXPECT_EQ(s.frames[2].module_offset, 0u);
  EXPECT_TRUE(s.frames[0].function.empty());
}

TEST(BboxReaderTest, FailedInitRecordKeepsTheDevice) {
  BboxBuilder b = makeProcess();
  // The comm never existed (no handle), but the rank's device is recorded.
  CommRecord failed{};
  failed.comm_id = kComm + 1;
  failed.rank = 3;
  failed.nranks = 8;
  failed.device = 0;
  failed.created_by = static_cast<uint32_t>(OpType::kCommInitRank);
  failed.init_result = 5;
  failed.state = kCommInitFailed;
  std::strcpy(failed.bus_id, "0000:1a:00.0");
  failed.device_source = kDeviceFromCudaContext;
  b.addComm(failed);
  base::StatusOr<RankData> r = parseBlackBox(b.data(), b.size(), "failed.bbox");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->comms.size(), 2u);
  const Comm& f = r->comms[1];
  EXPECT_EQ(f.comm_id, kComm + 1);
  EXPECT_EQ(f.handle, 0u);
  EXPECT_EQ(f.state, kCommInitFailed);
  EXPECT_EQ(f.init_result, 5);
  EXPECT_EQ(f.device, 0);
  EXPECT_EQ(f.bus_id, "0000:1a:00.0");
  EXPECT_EQ(f.uuid, "");  // all-zero bytes: unknown
  EXPECT_EQ(f.device_source, kDeviceFromCudaContext);
}

TEST(BboxReaderTest, InvalidRecordsAreIgnored) {
  BboxBuilder b = makeProcess();
  // A comm and a stack claimed but not yet published (valid not set).
  b.header()->comm_count = 2;
  b.header()->stack_count = 2;
  b.header()->module_count = 3;  // counts past the published records
  base::StatusOr<RankData> r = parseBlackBox(b.data(), b.size(), "x.bbox");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->comms.size(), 1u);
  EXPECT_EQ(r->stacks.size(), 1u);
  EXPECT_EQ(r->modules.size(), 1u);
  // Counters larger than the tables are clamped, not trusted.
  b.header()->comm_count = 0xffffffffu;
  b.header()->stack_count = 0xffffffffu;
  b.header()->module_count = 0xffffffffu;
  r = parseBlackBox(b.data(), b.size(), "x.bbox");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->comms.size(), 1u);
}

TEST(BboxReaderTest, RingWrapKeepsTheNewestCapacityEvents) {
  BboxCapacities caps;
  caps.ring = 8;
  BboxBuilder b(caps);
  for (uint64_t i = 0; i < 3 * caps.ring; ++i) {
    b.addEvent(makeCollective(OpType::kAllReduce, kComm, 0, 2, i + 1, i, 1000 + i));
  }
  base::StatusOr<RankData> r = parseBlackBox(b.data(), b.size(), "wrap.bbox");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->events_total, 24u);
  EXPECT_EQ(r->events_lost, 16u);
  ASSERT_EQ(r->events.size(), 8u);
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(r->events[i].index, 16 + i);
    EXPECT_EQ(r->events[i].op_seq, 17 + i);
    EXPECT_EQ(r->events[i].count, 16 + i);
  }
}

TEST(BboxReaderTest, SlotCaughtMidWriteIsSkippedAndCountedLost) {
  BboxBuilder b;
  b.addEvent(makeCollective(OpType::kAllReduce, kComm, 0, 2, 1, 1, 1));
  b.addUnpublishedEvent(makeCollective(OpType::kAllReduce, kComm, 0, 2, 2, 1, 2));
  b.addEvent(makeCollective(OpType::kAllReduce, kComm, 0, 2, 3, 1, 3));
  base::StatusOr<RankData> r = parseBlackBox(b.data(), b.size(), "mid.bbox");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->events_total, 3u);
  EXPECT_EQ(r->events_lost, 1u);
  ASSERT_EQ(r->events.size(), 2u);
  EXPECT_EQ(r->events[0].index, 0u);
  EXPECT_EQ(r->events[1].index, 2u);
}

TEST(BboxReaderTest, MisalignedBufferIsReadThroughACopy) {
  BboxBuilder b = makeProcess();
  std::vector<uint8_t> shifted(b.size() + 8);
  std::memcpy(shifted.data() + 8, b.data(), b.size());
  base::StatusOr<RankData> r = parseBlackBox(shifted.data() + 8, b.size(), "shifted.bbox");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->events.size(), 4u);
}

void expectError(const std::vector<uint8_t>& bytes, const std::string& needle) {
  base::StatusOr<RankData> r = parseBlackBox(bytes.data(), bytes.size(), "bad.bbox");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind("bad.bbox: ", 0), 0u) << r.status().message();
  EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
}

std::vector<uint8_t> copyOf(const BboxBuilder& b) {
  return std::vector<uint8_t>(b.data(), b.data() + b.size());
}

TEST(BboxReaderTest, ForeignTruncatedAndCorruptFilesAreErrors) {
  expectError({}, "bad magic");
  expectError({'N', 'C', 'R'}, "bad magic");
  expectError(std::vector<uint8_t>(8192, 'x'), "bad magic");

  BboxBuilder b = makeProcess();
  std::vector<uint8_t> bytes = copyOf(b);
  bytes.resize(100);
  expectError(bytes, "truncated");
  bytes = copyOf(b);
  bytes.resize(b.size() - 1);
  expectError(bytes, "truncated");

  bytes = copyOf(b);
  reinterpret_cast<BboxHeader*>(bytes.data())->version = kBboxVersion + 1;
  expectError(bytes, "newer than this build reads");

  bytes = copyOf(b);
  reinterpret_cast<BboxHeader*>(bytes.data())->ring_capacity = 6;
  expectError(bytes, "power of two");

  bytes = copyOf(b);
  reinterpret_cast<BboxHeader*>(bytes.data())->event_bytes = 64;
  expectError(bytes, "record sizes");

  bytes = copyOf(b);
  auto* h = reinterpret_cast<BboxHeader*>(bytes.data());
  h->file_bytes = 0;  // claims less than it is, while its tables run off the end
  h->module_offset = ~uint64_t{0} - 4095;
  expectError(bytes, "truncated");

  bytes = copyOf(b);
  h = reinterpret_cast<BboxHeader*>(bytes.data());
  h->stack_capacity = 0xffffffffu;
  expectError(bytes, "truncated");
}

// Random bytes behind a valid magic, random corruption of a valid file, and every truncation
// length on a coarse grid: each must give a Status, never a crash (run it under ASan).
TEST(BboxReaderTest, FuzzNeverCrashes) {
  std::mt19937_64 rng(12345);
  BboxBuilder b = makeProcess();
  const std::vector<uint8_t> good = copyOf(b);
  for (int iter = 0; iter < 300; ++iter) {
    std::vector<uint8_t> bytes = good;
    const int flips = 1 + static_cast<int>(rng() % 16);
    for (int f = 0; f < flips; ++f) {
      // Mostly the header, where offsets and sizes live.
      const size_t at = rng() % 4 == 0 ? rng() % bytes.size() : rng() % sizeof(BboxHeader);
      bytes[at] = static_cast<uint8_t>(rng());
    }
    std::memcpy(bytes.data(), kBboxMagic, sizeof(kBboxMagic));
    base::StatusOr<RankData> r = parseBlackBox(bytes.data(), bytes.size(), "fuzz.bbox");
    if (!r.ok()) {
      EXPECT_EQ(r.status().message().rfind("fuzz.bbox: ", 0), 0u);
    }
  }
  for (int iter = 0; iter < 100; ++iter) {
    std::vector<uint8_t> bytes(rng() % 20000);
    for (auto& byte : bytes) byte = static_cast<uint8_t>(rng());
    if (bytes.size() >= 8 && iter % 2 == 0) std::memcpy(bytes.data(), kBboxMagic, 8);
    base::StatusOr<RankData> r = parseBlackBox(bytes.data(), bytes.size(), "rand.bbox");
    EXPECT_FALSE(r.ok());
  }
  for (size_t len = 0; len < good.size(); len += 97) {
    base::StatusOr<RankData> r = parseBlackBox(good.data(), len, "cut.bbox");
    EXPECT_FALSE(r.ok()) << len;
  }
}

TEST(BboxReaderTest, PythonFramesAreNamedFromTheCodeRecords) {
  BboxCapacities caps;
  caps.pycodes = 4;
  caps.pyblob = 4096;
  BboxBuilder b(caps);
  b.header()->python_version = 0x030b;
  // 3.11 locations: [0,4) line first+2, [4,6) first+3.
  const uint32_t code = b.addPythonCode("/job/train.py", "Trainer.save_checkpoint", 30,
                                        kPyLinesLocations, {0xe9, 0x04, 0xd8, 0x00, 0x00});
  const uint32_t stack = b.addStack({pythonFrameWord(code, 4), pythonFrameWord(code, kPyNoOffset),
                                     pythonFrameWord(3, 0), pythonFrameWord(99, 0), kLibBase + 8});
  auto parsed = parseBlackBox(b.data(), b.size(), "py.bbox");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  const std::vector<Frame>& f = parsed.value().stacks.at(stack).frames;
  ASSERT_EQ(f.size(), 5u);
  EXPECT_TRUE(f[0].python);
  EXPECT_EQ(f[0].function, "Trainer.save_checkpoint");
  EXPECT_EQ(f[0].file, "/job/train.py");
  EXPECT_EQ(f[0].line, 33);
  EXPECT_EQ(f[0].address, 0u);
  EXPECT_EQ(f[1].line, 30);  // not started: the code's first line
  // A record never published and one past the table: named unknown, never read out of bounds.
  EXPECT_TRUE(f[2].python);
  EXPECT_EQ(f[2].function, "<unknown>");
  EXPECT_EQ(f[3].function, "<unknown>");
  EXPECT_FALSE(f[4].python);
  EXPECT_EQ(f[4].address, kLibBase + 8);
}

TEST(BboxReaderTest, PythonRegionsPastTheFileAreAnError) {
  BboxCapacities caps;
  caps.pycodes = 4;
  caps.pyblob = 4096;
  BboxBuilder b(caps);
  b.header()->pyblob_bytes = 1u << 30;
  auto parsed = parseBlackBox(b.data(), b.size(), "py.bbox");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("py.bbox: truncated black box (Python tables"),
            std::string::npos)
      << parsed.status().message();
  b.header()->pyblob_bytes = 4096;
  b.header()->pycode_bytes = 32;
  parsed = parseBlackBox(b.data(), b.size(), "py.bbox");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("Python code records"), std::string::npos);
}

TEST(BboxReaderTest, LoadsFromFile) {
  testing::TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  BboxBuilder b = makeProcess();
  const std::string path = dir.file("r3.bbox");
  ASSERT_TRUE(b.writeTo(path));
  base::StatusOr<RankData> r = loadBlackBox(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->source_path, path);
  EXPECT_EQ(r->events.size(), 4u);

  base::StatusOr<RankData> missing = loadBlackBox(dir.file("nope.bbox"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("nope.bbox: No such file"), std::string::npos)
      << missing.status().message();
  const std::string empty = dir.file("empty.bbox");
  ASSERT_TRUE(BboxBuilder().writeTo(empty));
  std::filesystem::resize_file(empty, 0);
  EXPECT_EQ(loadBlackBox(empty).status().message(), empty + ": empty file");
  EXPECT_EQ(loadBlackBox(dir.path()).status().message(), dir.path() + ": not a regular file");
}

}  // namespace
}  // namespace ncclrec::format
