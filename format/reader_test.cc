#include "format/reader.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>

#include "format/dump_io.h"
#include "format/testing/bbox_builder.h"
#include "format/testing/temp_dir.h"

namespace ncclrec::format {
namespace {

using testing::BboxBuilder;
using testing::makeCollective;

constexpr uint64_t kComm = 0x1122334455667788ull;

BboxBuilder makeBbox(int rank, int pid, int events) {
  BboxBuilder b;
  b.header()->pid = pid;
  b.header()->global_rank = rank;
  std::strcpy(b.header()->host, "host-a");
  for (int i = 0; i < events; ++i) {
    Event e = makeCollective(OpType::kAllReduce, kComm, rank, 4, i + 1, 8, 1000 * (i + 1));
    e.stack_id = 0;
    b.addEvent(e);
  }
  b.addStack({0x401000});
  b.addStack({0x402000});
  return b;
}

// What the recorder would dump for the same process after `events` events.
RankData makeDump(int rank, int pid, int events, int64_t dump_ns, DumpReason reason) {
  BboxBuilder b = makeBbox(rank, pid, events);
  RankData d = *parseBlackBox(b.data(), b.size(), "");
  d.source = SourceKind::kDump;
  d.dump_ns = dump_ns;
  d.dump_reason = reason;
  d.dump_detail = "detail@" + std::to_string(dump_ns);
  d.stacks[0].symbolized = true;
  d.stacks[0].frames[0].function = "train_step()";
  return d;
}

TEST(ReaderTest, NewestDumpWinsOverAnOlderDumpAndAnEqualBlackBox) {
  testing::TempDir dir;
  ASSERT_TRUE(makeBbox(0, 100, 5).writeTo(dir.file("r0.bbox")));
  ASSERT_TRUE(
      writeDumpFile(makeDump(0, 100, 3, 10, DumpReason::kTrigger), dir.file("r0-a.ncclrec.pb"))
          .ok());
  ASSERT_TRUE(
      writeDumpFile(makeDump(0, 100, 5, 20, DumpReason::kHang), dir.file("r0-b.ncclrec.pb")).ok());
  base::StatusOr<LoadedSet> set = loadPaths({dir.path()});
  ASSERT_TRUE(set.ok()) << set.status().message();
  EXPECT_TRUE(set->warnings.empty());
  ASSERT_EQ(set->ranks.size(), 1u);
  const RankData& r = set->ranks[0];
  EXPECT_EQ(r.source, SourceKind::kDump);
  EXPECT_EQ(r.source_path, dir.file("r0-b.ncclrec.pb"));
  EXPECT_EQ(r.dump_ns, 20);
  EXPECT_EQ(r.events.size(), 5u);
}

TEST(ReaderTest, BlackBoxThatWentOnWinsAndKeepsTheDumpsSymbols) {
  testing::TempDir dir;
  ASSERT_TRUE(makeBbox(0, 100, 8).writeTo(dir.file("r0.bbox")));
  ASSERT_TRUE(
      writeDumpFile(makeDump(0, 100, 5, 20, DumpReason::kHang), dir.file("r0.ncclrec.pb")).ok());
  base::StatusOr<LoadedSet> set = loadPaths({dir.path()});
  ASSERT_TRUE(set.ok()) << set.status().message();
  ASSERT_EQ(set->ranks.size(), 1u);
  const RankData& r = set->ranks[0];
  EXPECT_EQ(r.source, SourceKind::kBlackBox);
  EXPECT_EQ(r.source_path, dir.file("r0.bbox"));
  EXPECT_EQ(r.events.size(), 8u);
  EXPECT_EQ(r.dump_reason, DumpReason::kHang);
  EXPECT_EQ(r.dump_detail, "detail@20");
  ASSERT_EQ(r.stacks.size(), 2u);
  EXPECT_TRUE(r.stacks.at(0).symbolized);
  EXPECT_EQ(r.stacks.at(0).frames[0].function, "train_step()");
  EXPECT_FALSE(r.stacks.at(1).symbolized);
}

TEST(ReaderTest, ProcessesAreKeptApartAndSortedByRank) {
  testing::TempDir dir;
  ASSERT_TRUE(makeBbox(2, 300, 1).writeTo(dir.file("a.bbox")));
  ASSERT_TRUE(makeBbox(0, 100, 1).writeTo(dir.file("b.bbox")));
  ASSERT_TRUE(
      writeDumpFile(makeDump(1, 200, 2, 5, DumpReason::kExit), dir.file("c.ncclrec.pb")).ok());
  BboxBuilder other_host = makeBbox(0, 100, 1);  // same pid, other host: another process
  std::strcpy(other_host.header()->host, "host-b");
  ASSERT_TRUE(other_host.writeTo(dir.file("d.bbox")));
  base::StatusOr<LoadedSet> set = loadPaths({dir.path()});
  ASSERT_TRUE(set.ok()) << set.status().message();
  ASSERT_EQ(set->ranks.size(), 4u);
  EXPECT_EQ(set->ranks[0].global_rank, 0);
  EXPECT_EQ(set->ranks[0].host, "host-a");
  EXPECT_EQ(set->ranks[1].global_rank, 0);
  EXPECT_EQ(set->ranks[1].host, "host-b");
  EXPECT_EQ(set->ranks[2].global_rank, 1);
  EXPECT_EQ(set->ranks[3].global_rank, 2);
}

TEST(ReaderTest, UnreadableFilesInADirectoryAreWarnings) {
  testing::TempDir dir;
  ASSERT_TRUE(makeBbox(0, 100, 2).writeTo(dir.file("good.bbox")));
  std::ofstream(dir.file("junk.bbox")) << "junk";
  std::ofstream(dir.file("junk.ncclrec.pb")) << "NCRECPB1\xff\xff";
  std::ofstream(dir.file("notes.txt")) << "ignored: not a recording name";
  std::ofstream(dir.file("x.ncclrec.pb.tmp.123")) << "ignored: a dump being written";
  base::StatusOr<LoadedSet> set = loadPaths({dir.path()});
  ASSERT_TRUE(set.ok()) << set.status().message();
  EXPECT_EQ(set->ranks.size(), 1u);
  ASSERT_EQ(set->warnings.size(), 2u);
  EXPECT_EQ(set->warnings[0],
            dir.file("junk.bbox") + ": not an ncclrec black box or dump (bad magic)");
  EXPECT_EQ(set->warnings[1], dir.file("junk.ncclrec.pb") + ": corrupt or truncated ncclrec dump");
}

TEST(ReaderTest, FilesAreLoadedByContentWhateverTheirName) {
  testing::TempDir dir;
  ASSERT_TRUE(makeBbox(3, 100, 2).writeTo(dir.file("renamed.dat")));
  base::StatusOr<LoadedSet> set = loadPaths({dir.file("renamed.dat")});
  ASSERT_TRUE(set.ok()) << set.status().message();
  ASSERT_EQ(set->ranks.size(), 1u);
  EXPECT_EQ(set->ranks[0].global_rank, 3);
}

TEST(ReaderTest, ErrorsNameThePath) {
  testing::TempDir dir;
  const std::string missing = dir.file("missing.bbox");
  EXPECT_EQ(loadPaths({missing}).status().message(), missing + ": No such file or directory");

  const std::string junk = dir.file("junk.bbox");
  std::ofstream(junk) << "junk";
  EXPECT_EQ(loadPaths({junk}).status().message(),
            junk + ": not an ncclrec black box or dump (bad magic)");

  const std::string empty = dir.file("empty");
  std::filesystem::create_directory(empty);
  const std::string msg = loadPaths({empty}).status().message();
  EXPECT_EQ(msg.rfind(empty + ": no readable black box or dump", 0), 0u) << msg;

  EXPECT_FALSE(loadPaths({}).ok());
}

}  // namespace
}  // namespace ncclrec::format
