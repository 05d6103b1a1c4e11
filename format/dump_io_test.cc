#include "format/dump_io.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <climits>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "format/bbox_layout.h"
#include "format/reader.h"
#include "format/testing/temp_dir.h"

namespace ncclrec::format {
namespace {

// Every field set to something other than its default, so a field that a conversion forgets
// makes the round trip differ.
RankData fullRankData() {
  RankData d;
  d.source = SourceKind::kDump;
  d.format_version = kDumpFormatMajor;
  d.pid = 31337;
  d.global_rank = 5;
  d.world_size = 16;
  d.local_rank = 2;
  d.host = "gpu-node-12";
  d.run_id = "job-77";
  d.exe = "/usr/bin/train";
  d.start_ns = 1;
  d.heartbeat_ns = 2;
  d.exited = true;
  d.exit_ns = 3;
  d.fatal_signal = 6;
  d.fatal_ns = 4;
  d.cuda_completion = true;
  d.hang_event_index = 1;
  d.dump_reason = DumpReason::kHang;
  d.dump_ns = 5;
  d.dump_detail = "op #1 ncclAllReduce incomplete for 61.0 s";
  d.events_total = 102;
  d.events_lost = 100;
  d.stacks_dropped = 9;
  for (uint64_t i = 100; i < 102; ++i) {
    EventRecord e;
    e.index = i;
    e.op = i == 100 ? OpType::kSend : OpType::kAllReduce;
    e.state = EventState::kFailed;
    e.setCommId(0xfedcba9876543210ull);
    e.setCommIndex(1);
    e.op_seq = 7;
    e.count = 1ull << 40;
    e.setStream(0xdeadbeefcafeull);
    e.setRank(5);
    e.setNranks(16);
    e.setPeer(4);
    e.setDevice(3);
    e.redop = 6;
    e.dtype = 9;
    e.setTid(999);
    e.group_depth = 2;
    e.result = 3;
    e.flags = 0xf;
    e.setStackId(4);
    e.setEnqueueNs(-10);
    e.setStartNs(11);
    e.setEndNs(12);
    d.events.push_back(e);
  }
  d.event_aux.push_back(EventAux{101, -7, -8, 0x1111222233334444ull});  // none for #100
  Comm c;
  c.index = 1;
  c.comm_id = 0xfedcba9876543210ull;
  c.parent_id = 42;
  c.handle = 0x7777;
  c.rank = 5;
  c.nranks = 16;
  c.device = 3;
  c.global_rank = 5;
  c.color = 1;
  c.key = 2;
  c.created_by = OpType::kCommSplit;
  c.init_result = 1;
  c.state = 3;
  c.coll_seq = 8;
  c.created_ns = 13;
  c.ended_ns = 14;
  c.name = "tp";
  c.bus_id = "0000:3b:00.0";
  c.uuid = "GPU-a0a1a2a3-a4a5-a6a7-a8a9-aaabacadaeaf";
  c.device_source = kDeviceFromHostnccl;
  d.comms.push_back(c);
  Stack s;
  s.id = 4;
  s.symbolized = true;
  s.frames.push_back(
      Frame{0x401000, "/usr/bin/train", 0x1000, "save_checkpoint(int)", "train.cc", 120});
  s.frames.push_back(Frame{0x402000, "/usr/bin/train", 0x2000, "main", "main.cc", 9});
  d.stacks[4] = s;
  d.modules.push_back(Module{"/usr/bin/train", 0x400000, 0x10000, "0a1b2c"});
  ThreadState t;
  t.tid = 4243;
  t.name = "pt_data_worker";
  t.status = kThreadAnswered;
  t.flags = kThreadFramesTruncated;
  t.kernel_state = 'S';
  t.wchan = "pipe_read";
  t.cpu_ticks = 17;
  t.symbolized = true;
  t.frames.push_back(Frame{0, "", 0, "load_shard", "data.py", 81, true});
  t.frames.push_back(Frame{0x401000, "/usr/bin/train", 0x1000, "read", "", 0});
  d.threads.push_back(t);
  t.tid = 4244;
  t.status = kThreadNoAnswer;
  t.flags = kThreadSignalBlocked;
  t.frames.clear();
  d.threads.push_back(t);
  d.threads_ns = 1700000000123456789;
  d.threads_reason = DumpReason::kHang;
  d.threads_dumper_tid = 4245;
  return d;
}

std::string readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void writeAll(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

TEST(DumpIoTest, ProtoRoundTripKeepsEveryField) {
  const RankData d = fullRankData();
  const pb::Dump p = toProto(d);
  EXPECT_EQ(p.magic(), kDumpMessageMagic);
  EXPECT_EQ(p.format_major(), kDumpFormatMajor);
  EXPECT_EQ(fromProto(p), d);
}

// EventRecord packs its fields into bit-fields (model.h): the extremes of each width survive a
// write and a read, sentinels included, and the aux words of the events that have them stay with
// those events.
TEST(DumpIoTest, EventBitFieldsKeepTheirExtremes) {
  RankData d = fullRankData();
  d.events.clear();
  d.event_aux.clear();
  EventRecord hi;
  hi.index = (1ull << 48) - 1;
  hi.op = OpType::kSend;
  hi.op_seq = (1ull << 48) - 1;
  hi.state = EventState::kFailed;
  hi.dtype = 127;
  hi.setStream((1ull << 48) - 1);
  hi.redop = 32767;
  hi.setCommId(~0ull);
  hi.count = ~0ull;
  hi.setEnqueueNs(INT64_MIN);
  hi.setStartNs(INT64_MAX);
  hi.setEndNs(-1);
  hi.setRank((1 << 23) - 1);
  hi.flags = 0xff;
  hi.setNranks((1 << 23) - 1);
  hi.group_depth = 0xff;
  hi.setPeer(-(1 << 23));
  hi.result = -128;
  hi.setTid((1u << 24) - 1);
  hi.setDevice(127);
  hi.setCommIndex(0xfffffffeu);
  hi.setStackId(0xfffffffeu);
  EventRecord lo;  // the defaults: -1 and 0xffffffff sentinels
  lo.index = (1ull << 48) - 2;
  d.events = {lo, hi};
  d.event_aux.push_back(EventAux{hi.index, INT32_MIN, INT32_MAX, ~0ull});
  EXPECT_EQ(d.events[1].peer(), -(1 << 23));
  EXPECT_EQ(d.events[1].rank(), (1 << 23) - 1);
  EXPECT_EQ(d.events[0].dtype, -1);
  EXPECT_EQ(d.events[0].redop, -1);
  EXPECT_EQ(d.events[0].device(), -1);
  EXPECT_EQ(d.events[0].stackId(), 0xffffffffu);
  const RankData back = fromProto(toProto(d));
  EXPECT_EQ(back, d);
  ASSERT_EQ(back.event_aux.size(), 1u);
  EXPECT_EQ(back.event_aux[0].index, (1ull << 48) - 1);
}

TEST(DumpIoTest, WriteThenLoadEqualsAndLeavesNoTempFile) {
  testing::TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::string path = dir.file("rank5.ncclrec.pb");
  const base::Status st = writeDumpFile(fullRankData(), path);
  ASSERT_TRUE(st.ok()) << st.message();

  struct stat sb {};
  ASSERT_EQ(::stat(path.c_str(), &sb), 0);
  EXPECT_EQ(sb.st_mode & 0777, 0600u);
  EXPECT_EQ(readAll(path).substr(0, 8), "NCRECPB1");
  int entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++entries;
  EXPECT_EQ(entries, 1);

  base::StatusOr<RankData> loaded = loadDump(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  RankData expected = fullRankData();
  expected.source_path = path;
  EXPECT_EQ(*loaded, expected);
  // loadFile tells it apart by content.
  base::StatusOr<RankData> by_content = loadFile(path);
  ASSERT_TRUE(by_content.ok()) << by_content.status().message();
  EXPECT_EQ(*by_content, expected);
}

// Many pages of events: the reader reserves and pre-faults the event vector (prefault.h) and
// reads the file in as few read() calls as the kernel allows; neither may change what is read.
TEST(DumpIoTest, ManyPagesOfEventsLoadUnchanged) {
  testing::TempDir dir;
  const std::string path = dir.file("big.ncclrec.pb");
  RankData d = fullRankData();
  const EventRecord pattern = d.events.back();
  for (uint64_t i = 102; i < 102 + 20000; ++i) {
    EventRecord e = pattern;
    e.index = i;
    e.op_seq = i;
    e.setEndNs(static_cast<int64_t>(i) * 1000);
    d.events.push_back(e);
  }
  d.events_total = d.events.back().index + 1;
  ASSERT_TRUE(writeDumpFile(d, path).ok());
  base::StatusOr<RankData> loaded = loadDump(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  d.source_path = path;
  EXPECT_EQ(*loaded, d);
}

// A FIFO with a dump's name must be refused, not waited on for a writer.
TEST(DumpIoTest, FifoIsRefusedWithoutBlocking) {
  testing::TempDir dir;
  const std::string path = dir.file("fifo.ncclrec.pb");
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  EXPECT_EQ(loadDump(path).status().message(), path + ": not a regular file");
}

TEST(DumpIoTest, WriteFailureNamesThePath) {
  const base::Status st = writeDumpFile(fullRankData(), "/nonexistent-dir/x.ncclrec.pb");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message().rfind("/nonexistent-dir/x.ncclrec.pb: cannot create", 0), 0u)
      << st.message();
}

TEST(DumpIoTest, RejectsForeignFiles) {
  testing::TempDir dir;
  const std::string path = dir.file("foreign.ncclrec.pb");
  writeAll(path, "this is not a dump at all");
  EXPECT_EQ(loadDump(path).status().message(), path + ": not an ncclrec dump (bad magic)");
  EXPECT_EQ(loadFile(path).status().message(),
            path + ": not an ncclrec black box or dump (bad magic)");

  // Our framing around a message that is not ours.
  pb::Dump other;
  other.set_magic("something-else");
  other.set_format_major(1);
  writeAll(path, std::string("NCRECPB1") + other.SerializeAsString());
  EXPECT_EQ(loadDump(path).status().message(), path + ": not an ncclrec dump (bad magic)");

  writeAll(path, std::string("NCRECPB1") + "\xff\xff\xff\xff garbage");
  EXPECT_EQ(loadDump(path).status().message(), path + ": corrupt or truncated ncclrec dump");

  writeAll(path, "NCREC");
  EXPECT_EQ(loadDump(path).status().message(), path + ": not an ncclrec dump (bad magic)");
  EXPECT_NE(loadDump(dir.file("missing.ncclrec.pb")).status().message().find("missing"),
            std::string::npos);
}

TEST(DumpIoTest, RejectsNewerVersions) {
  testing::TempDir dir;
  const std::string path = dir.file("new.ncclrec.pb");
  pb::Dump p = toProto(fullRankData());
  p.set_format_major(kDumpFormatMajor + 1);
  writeAll(path, std::string(kDumpFileMagic, 8) + p.SerializeAsString());
  const std::string msg = loadDump(path).status().message();
  EXPECT_EQ(
      msg.rfind(path + ": dump format version 2." + std::to_string(kDumpFormatMinor) + " is newer",
                0),
      0u)
      << msg;

  // A newer minor version reads fine: its unknown fields are skipped.
  p.set_format_major(kDumpFormatMajor);
  p.set_format_minor(kDumpFormatMinor + 3);
  std::string body = p.SerializeAsString();
  body += std::string("\xa8\x1f\x01", 3);  // field 501, varint 1: unknown to this build
  writeAll(path, std::string(kDumpFileMagic, 8) + body);
  base::StatusOr<RankData> ok = loadDump(path);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->pid, 31337);

  std::string framed = std::string(kDumpFileMagic, 8) + p.SerializeAsString();
  framed[7] = '2';
  writeAll(path, framed);
  const std::string framing = loadDump(path).status().message();
  EXPECT_EQ(framing.rfind(path + ": dump framing version '2'", 0), 0u) << framing;
}

TEST(DumpIoTest, TruncatedDumpsAreErrorsNotCrashes) {
  const std::string framed =
      std::string(kDumpFileMagic, 8) + toProto(fullRankData()).SerializeAsString();
  int errors = 0;
  for (size_t len = 0; len < framed.size(); ++len) {
    base::StatusOr<RankData> r = parseDump(framed.data(), len, "cut.ncclrec.pb");
    if (!r.ok()) {
      ++errors;
      EXPECT_EQ(r.status().message().rfind("cut.ncclrec.pb: ", 0), 0u);
    }
  }
  // Most cuts land inside a field; a cut on a field boundary may still parse (protobuf has no
  // length prefix), which is why the magic field comes first and is checked.
  EXPECT_GT(errors, static_cast<int>(framed.size()) / 2);
}

}  // namespace
}  // namespace ncclrec::format
