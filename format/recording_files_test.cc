#include "format/recording_files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "format/op_type.h"
#include "format/testing/temp_dir.h"

namespace ncclrec::format {
namespace {

RecordingName box(std::string host, int pid, int instance = 0) {
  RecordingName n;
  n.host = std::move(host);
  n.pid = pid;
  n.instance = instance;
  return n;
}

void expectRoundTrip(const RecordingName& n, const std::string& file_name) {
  EXPECT_EQ(n.fileName(), file_name);
  const std::optional<RecordingName> back = RecordingName::parse(file_name);
  ASSERT_TRUE(back) << file_name;
  EXPECT_EQ(back->host, n.host);
  EXPECT_EQ(back->pid, n.pid);
  EXPECT_EQ(back->instance, n.instance);
  EXPECT_EQ(back->dump_seq, n.dump_seq);
  EXPECT_EQ(back->reason, n.reason);
  EXPECT_EQ(back->isDump(), n.isDump());
}

TEST(RecordingNameTest, BlackBoxesAndDumpsRoundTrip) {
  expectRoundTrip(box("node7", 4242), "node7.4242.bbox");
  expectRoundTrip(box("node7", 4242, 3), "node7.4242-3.bbox");
  // Host names may hold dots and dashes: fields are taken from the end.
  expectRoundTrip(box("gpu-01.cluster.example", 9), "gpu-01.cluster.example.9.bbox");
  for (DumpReason reason :
       {DumpReason::kHang, DumpReason::kSignal, DumpReason::kNcclError, DumpReason::kExit,
        DumpReason::kTrigger, DumpReason::kAbort, DumpReason::kManual}) {
    const std::string why(dumpReasonName(reason));
    expectRoundTrip(box("a.b", 17).dump(2, why), "a.b.17.2." + why + ".ncclrec.pb");
    expectRoundTrip(box("a.b", 17, 1).dump(12, why), "a.b.17-1.12." + why + ".ncclrec.pb");
  }
}

TEST(RecordingNameTest, OtherNamesAreNotRecordings) {
  for (const char* name :
       {"", ".bbox", "4242.bbox", "node.bbox", "node.0.bbox", "node.-3.bbox", "node.12-0.bbox",
        "node.12-x.bbox", "node.12.bbox.tmp", "node.12.ncclrec.pb", "node.12.x.hang.ncclrec.pb",
        "node.12.1.HANG.ncclrec.pb", "node.12.1..ncclrec.pb", "ncclrec.trigger",
        "node.12.1.hang.pb", ".12.bbox"}) {
    EXPECT_FALSE(RecordingName::parse(name)) << "'" << name << "'";
  }
}

TEST(TriggerFileTest, TextRoundTripsAndDetailStaysOneLine) {
  TriggerFile t;
  t.run_id = "job-3";
  t.host = "node7";
  t.pid = 4242;
  t.rank = 5;
  t.reason = "hang";
  t.detail = "ncclAllReduce #4 incomplete\nfor 3.0 s";
  EXPECT_EQ(t.text(),
            "run_id=job-3\nhost=node7\npid=4242\nrank=5\nreason=hang\n"
            "detail=ncclAllReduce #4 incomplete for 3.0 s\n");
  const TriggerFile back = TriggerFile::parse(t.text());
  EXPECT_EQ(back.run_id, "job-3");
  EXPECT_EQ(back.host, "node7");
  EXPECT_EQ(back.pid, 4242);
  EXPECT_EQ(back.rank, 5);
  EXPECT_TRUE(back.has_rank);
  EXPECT_EQ(back.reason, "hang");
  EXPECT_EQ(back.detail, "ncclAllReduce #4 incomplete for 3.0 s");
}

TEST(TriggerFileTest, ParseToleratesForeignAndBrokenText) {
  // cxxrun hands on another node's note: a first line that is no key, then that node's trigger.
  const TriggerFile note = TriggerFile::parse("nodeB: run_id=r1\nhost=nodeB\nrank=2\ndetail=x\n");
  EXPECT_EQ(note.run_id, "");
  EXPECT_EQ(note.host, "nodeB");
  EXPECT_EQ(note.rank, 2);
  EXPECT_EQ(note.detail, "x");
  const TriggerFile bad = TriggerFile::parse("rank=two\npid=\nno equals sign\n=\n");
  EXPECT_FALSE(bad.has_rank);
  EXPECT_EQ(bad.rank, -1);
  EXPECT_EQ(bad.pid, 0);
  EXPECT_FALSE(TriggerFile::parse("").has_rank);
  // A file cut short (read while being replaced) keeps what it has.
  EXPECT_EQ(TriggerFile::parse("run_id=r9\nhost=n").host, "n");
}

TEST(TriggerFileTest, ConcernsItsOwnRunOrEveryRunWhenEitherIdIsEmpty) {
  TriggerFile t;
  t.run_id = "r1";
  EXPECT_TRUE(t.concerns("r1"));
  EXPECT_FALSE(t.concerns("r10"));
  EXPECT_TRUE(t.concerns(""));
  t.run_id = "";
  EXPECT_TRUE(t.concerns("r1"));
}

TEST(TriggerFileTest, WriteReplacesTheFileWholeAndChangesItsStamp) {
  testing::TempDir dir;
  const std::string path = dir.file("ncclrec.trigger");
  EXPECT_FALSE(FileStamp::of(path));
  TriggerFile t;
  t.run_id = "r1";
  t.detail = "first";
  std::string error;
  ASSERT_TRUE(t.write(path, &error)) << error;
  const std::optional<FileStamp> first = FileStamp::of(path);
  ASSERT_TRUE(first);
  EXPECT_EQ(*first, *FileStamp::of(path));
  t.detail = "second";
  ASSERT_TRUE(t.write(path, &error)) << error;
  const std::optional<FileStamp> second = FileStamp::of(path);
  ASSERT_TRUE(second);
  EXPECT_NE(*first, *second);  // a new inode (rename), even within one mtime tick
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(TriggerFile::parse(text.str()).detail, "second");
  EXPECT_FALSE(TriggerFile().write(dir.file("missing/ncclrec.trigger"), &error));
  EXPECT_NE(error.find("missing/ncclrec.trigger"), std::string::npos) << error;
}

}  // namespace
}  // namespace ncclrec::format
