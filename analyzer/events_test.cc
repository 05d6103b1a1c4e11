#include "analyzer/events.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "analyzer/exit_codes.h"
#include "format/dump_io.h"
#include "format/testing/bbox_builder.h"
#include "format/testing/temp_dir.h"

namespace ncclrec::analyzer {
namespace {

using format::testing::BboxBuilder;
using format::testing::makeCollective;

constexpr uint64_t kWorld = 0xaabbccdd00000001ull;
constexpr uint64_t kPair = 0x1234567800000002ull;
constexpr uint64_t kLib = 0x7f0000000000ull;
constexpr int64_t kSecond = 1'000'000'000;

// Rank `rank` of 2: all-reduce, send (on a pair comm), all-reduce, and a last all-reduce still
// running 2 s after it was enqueued (the heartbeat).
BboxBuilder makeRank(int rank) {
  BboxBuilder b;
  format::BboxHeader* h = b.header();
  h->pid = 100 + rank;
  h->global_rank = rank;
  h->world_size = 2;
  std::strcpy(h->host, "node1");
  std::strcpy(h->run_id, "run-9");
  h->heartbeat_ns = 12 * kSecond;
  b.addModule("/opt/lib/libtrain.so", kLib, 0x10000, {0x01});
  const uint32_t stack = b.addStack({kLib + 0x1234, kLib + 0x40});
  auto allReduce = [&](uint64_t seq, int64_t at) {
    format::Event e = makeCollective(format::OpType::kAllReduce, kWorld, rank, 2, seq, 1024, at);
    e.stack_id = stack;
    return e;
  };
  b.addEvent(allReduce(1, 8 * kSecond));
  format::Event send = makeCollective(format::OpType::kSend, kPair, rank, 2, 1, 7, 9 * kSecond);
  send.peer = 1 - rank;
  send.dtype = 2;  // int32
  send.redop = -1;
  b.addEvent(send);
  b.addEvent(allReduce(2, 9 * kSecond));
  format::Event hung = allReduce(3, 10 * kSecond);
  hung.end_ns = 0;
  hung.state = static_cast<uint8_t>(format::EventState::kStarted);
  b.addEvent(hung);
  return b;
}

class EventsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    ASSERT_TRUE(makeRank(1).writeTo(dir_.file("rank1.bbox")));
    ASSERT_TRUE(makeRank(0).writeTo(dir_.file("rank0.bbox")));
  }

  int run(const EventsOptions& options, std::vector<std::string> paths = {}) {
    out_.str("");
    err_.str("");
    if (paths.empty()) paths = {dir_.path()};
    return runEvents(paths, options, out_, err_);
  }

  std::vector<std::string> outLines() const {
    std::vector<std::string> lines;
    std::istringstream in(out_.str());
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }

  size_t count(const std::string& needle) const {
    size_t n = 0;
    const std::string s = out_.str();
    for (size_t at = s.find(needle); at != std::string::npos; at = s.find(needle, at + 1)) ++n;
    return n;
  }

  format::testing::TempDir dir_;
  std::ostringstream out_, err_;
};

TEST_F(EventsTest, TextListsEveryRankAndEvent) {
  ASSERT_EQ(run({}), kExitOk) << err_.str();
  EXPECT_EQ(err_.str(), "");
  const std::vector<std::string> lines = outLines();
  // Per rank: header, column titles, 4 events; a blank line between ranks.
  ASSERT_EQ(lines.size(), 13u) << out_.str();
  EXPECT_EQ(lines[0], "== rank 0/2  host node1  pid 100  black box " + dir_.file("rank0.bbox") +
                          "  run run-9  events 4 recorded, 0 lost  no exit mark");
  EXPECT_EQ(lines[7], "== rank 1/2  host node1  pid 101  black box " + dir_.file("rank1.bbox") +
                          "  run run-9  events 4 recorded, 0 lost  no exit mark");
  EXPECT_NE(lines[1].find("call site"), std::string::npos);

  const std::string& ar = lines[2];
  EXPECT_NE(ar.find("ncclAllReduce"), std::string::npos) << ar;
  EXPECT_NE(ar.find(" aabbccdd "), std::string::npos) << ar;
  EXPECT_NE(ar.find(" 0/2 "), std::string::npos) << ar;
  EXPECT_NE(ar.find(" 1024 "), std::string::npos) << ar;
  EXPECT_NE(ar.find(" float32 "), std::string::npos) << ar;
  EXPECT_NE(ar.find(" sum "), std::string::npos) << ar;
  EXPECT_NE(ar.find(" completed "), std::string::npos) << ar;
  EXPECT_NE(ar.find(" ok "), std::string::npos) << ar;
  EXPECT_NE(ar.find("took 1.50ms"), std::string::npos) << ar;
  EXPECT_EQ(ar.substr(ar.size() - std::strlen("libtrain.so+0x1234")), "libtrain.so+0x1234");

  const std::string& send = lines[3];
  EXPECT_NE(send.find("ncclSend"), std::string::npos) << send;
  EXPECT_NE(send.find(" 12345678 "), std::string::npos) << send;
  EXPECT_NE(send.find(" int32 "), std::string::npos) << send;
  EXPECT_NE(send.find(" none "), std::string::npos) << send;   // no redop
  EXPECT_NE(send.find("     1 "), std::string::npos) << send;  // peer
  EXPECT_EQ(send.back(), '-');                                 // no stack

  const std::string& hung = lines[5];
  EXPECT_NE(hung.find(" started "), std::string::npos) << hung;
  EXPECT_NE(hung.find("age 2.0s"), std::string::npos) << hung;  // heartbeat 12 s, enqueued 10 s
  EXPECT_NE(hung.find(" started   -  "), std::string::npos) << hung;  // no return code yet
  EXPECT_EQ(hung.find(" ok "), std::string::npos) << hung;
}

TEST_F(EventsTest, RankFilter) {
  EventsOptions o;
  o.rank = 1;
  ASSERT_EQ(run(o), kExitOk) << err_.str();
  EXPECT_EQ(count("== rank"), 1u);
  EXPECT_EQ(count("== rank 1/2"), 1u);

  o.rank = 5;
  EXPECT_EQ(run(o), kExitBadInput);
  EXPECT_EQ(out_.str(), "");
  EXPECT_EQ(err_.str(), "ncclrec-analyze: --rank 5: no such rank in the recordings (ranks: 0,1)\n");
}

TEST_F(EventsTest, CommFilterTakesAnIdOrAPrefix) {
  EventsOptions o;
  o.comm = "0x12345678";
  ASSERT_EQ(run(o), kExitOk) << err_.str();
  EXPECT_EQ(count("ncclSend"), 2u);
  EXPECT_EQ(count("ncclAllReduce"), 0u);

  o.comm = "AABBCCDD00000001";
  ASSERT_EQ(run(o), kExitOk) << err_.str();
  EXPECT_EQ(count("ncclSend"), 0u);
  EXPECT_EQ(count("ncclAllReduce"), 6u);

  o.comm = "ffff";
  ASSERT_EQ(run(o), kExitOk) << err_.str();
  EXPECT_EQ(count("(no events on that communicator)"), 2u);

  o.comm = "zz";
  EXPECT_EQ(run(o), kExitBadInput);
  EXPECT_EQ(err_.str(),
            "ncclrec-analyze: --comm: 'zz' is not a communicator id (up to 16 hex digits)\n");
}

TEST_F(EventsTest, LastKeepsTheNewestEventsOfEachRank) {
  EventsOptions o;
  o.last = 2;
  ASSERT_EQ(run(o), kExitOk) << err_.str();
  EXPECT_EQ(count("ncclAllReduce"), 4u);  // the last two of each rank
  EXPECT_EQ(count("ncclSend"), 0u);
  o.comm = "aabbccdd";
  o.last = 1;
  ASSERT_EQ(run(o), kExitOk) << err_.str();
  EXPECT_EQ(count("ncclAllReduce"), 2u);
  EXPECT_EQ(count(" started "), 2u);
}

TEST_F(EventsTest, JsonParsesAndHoldsTheSameEvents) {
  EventsOptions o;
  o.json = true;
  ASSERT_EQ(run(o), kExitOk) << err_.str();
  const nlohmann::json doc = nlohmann::json::parse(out_.str());
  ASSERT_EQ(doc["ranks"].size(), 2u);
  const nlohmann::json& r0 = doc["ranks"][0];
  EXPECT_EQ(r0["global_rank"], 0);
  EXPECT_EQ(r0["host"], "node1");
  EXPECT_EQ(r0["pid"], 100);
  EXPECT_EQ(r0["source_kind"], "bbox");
  EXPECT_EQ(r0["source"], dir_.file("rank0.bbox"));
  EXPECT_EQ(r0["events_total"], 4);
  EXPECT_EQ(r0["events_lost"], 0);
  EXPECT_EQ(r0["dump_reason"], "none");
  ASSERT_EQ(r0["events"].size(), 4u);
  const nlohmann::json& ar = r0["events"][0];
  EXPECT_EQ(ar["op"], "ncclAllReduce");
  EXPECT_EQ(ar["comm_id"], "aabbccdd00000001");
  EXPECT_EQ(ar["seq"], 1);
  EXPECT_EQ(ar["count"], 1024);
  EXPECT_EQ(ar["dtype"], "float32");
  EXPECT_EQ(ar["redop"], "sum");
  EXPECT_TRUE(ar["peer"].is_null());
  EXPECT_EQ(ar["state"], "completed");
  EXPECT_EQ(ar["duration_ns"], 1'500'000);
  EXPECT_EQ(ar["call_site"], "libtrain.so+0x1234");
  const nlohmann::json& send = r0["events"][1];
  EXPECT_EQ(send["peer"], 1);
  EXPECT_TRUE(send["redop"].is_null());
  EXPECT_TRUE(send["stack_id"].is_null());
  EXPECT_EQ(r0["events"][3]["age_ns"], 2 * kSecond);
  EXPECT_TRUE(doc["warnings"].empty());

  o.rank = 1;
  o.comm = "1234";
  ASSERT_EQ(run(o), kExitOk) << err_.str();
  const nlohmann::json filtered = nlohmann::json::parse(out_.str());
  ASSERT_EQ(filtered["ranks"].size(), 1u);
  EXPECT_EQ(filtered["ranks"][0]["global_rank"], 1);
  ASSERT_EQ(filtered["ranks"][0]["events"].size(), 1u);
  EXPECT_EQ(filtered["ranks"][0]["events"][0]["op"], "ncclSend");
}

TEST_F(EventsTest, DumpsShowTheirReasonAndSymbolizedCallSite) {
  format::RankData d = *format::loadBlackBox(dir_.file("rank0.bbox"));
  d.dump_reason = format::DumpReason::kHang;
  d.dump_ns = 70 * kSecond;
  d.dump_detail = "op #3 ncclAllReduce incomplete for 60.0 s";
  d.exited = true;
  d.fatal_signal = 11;
  format::Stack& s = d.stacks.at(0);
  s.symbolized = true;
  s.frames[1].function = "save_checkpoint(int)";
  s.frames[1].file = "/src/train/checkpoint.cc";
  s.frames[1].line = 88;
  ASSERT_TRUE(format::writeDumpFile(d, dir_.file("rank0.ncclrec.pb")).ok());

  EventsOptions o;
  o.rank = 0;
  ASSERT_EQ(run(o), kExitOk) << err_.str();
  const std::vector<std::string> lines = outLines();
  ASSERT_EQ(lines.size(), 6u) << out_.str();
  EXPECT_EQ(lines[0], "== rank 0/2  host node1  pid 100  dump " + dir_.file("rank0.ncclrec.pb") +
                          "  run run-9  events 4 recorded, 0 lost  exited, fatal SIGSEGV, dump: "
                          "hang (op #3 ncclAllReduce incomplete for 60.0 s)");
  const std::string& ar = lines[2];
  EXPECT_EQ(ar.substr(ar.size() - std::strlen("save_checkpoint(int) checkpoint.cc:88")),
            "save_checkpoint(int) checkpoint.cc:88");
  EXPECT_NE(lines[5].find("age 60.0s"), std::string::npos) << lines[5];  // to the dump time
}

// On a GPU the watchdog stamps start and end when it sees the CUDA events fire, once per poll: the
// listing says how soon after its enqueue the op was seen complete, not a duration.
TEST_F(EventsTest, CudaTimedOpsSayWithinHowLongTheyCompleted) {
  format::RankData d = *format::loadBlackBox(dir_.file("rank0.bbox"));
  d.source = format::SourceKind::kDump;
  format::EventRecord& e = d.events.at(0);
  e.flags |= format::kEventCudaTimed;
  e.setEndNs(e.enqueueNs() + 200'000'000);  // both seen at one poll
  e.setStartNs(e.endNs());
  ASSERT_TRUE(format::writeDumpFile(d, dir_.file("rank0.ncclrec.pb")).ok());
  EventsOptions o;
  o.rank = 0;
  ASSERT_EQ(run(o), kExitOk) << err_.str();
  const std::vector<std::string> lines = outLines();
  ASSERT_GE(lines.size(), 4u) << out_.str();
  EXPECT_NE(lines[2].find(" within 200"), std::string::npos) << lines[2];
  EXPECT_EQ(lines[2].find("took"), std::string::npos) << lines[2];
  EXPECT_NE(lines[3].find("took 1.50ms"), std::string::npos) << lines[3];  // host-timed: as before
  o.json = true;
  ASSERT_EQ(run(o), kExitOk) << err_.str();
  const nlohmann::json doc = nlohmann::json::parse(out_.str());
  const nlohmann::json& ar = doc["ranks"][0]["events"][0];
  EXPECT_EQ(ar["completed_within_ns"], 200'000'000);
  EXPECT_FALSE(ar.contains("duration_ns"));
}

TEST_F(EventsTest, BadPathsAreOneLineAndExitOne) {
  const std::string missing = dir_.file("nope.bbox");
  EXPECT_EQ(run({}, {missing}), kExitBadInput);
  EXPECT_EQ(out_.str(), "");
  EXPECT_EQ(err_.str(), "ncclrec-analyze: " + missing + ": No such file or directory\n");

  const std::string junk = dir_.file("junk.txt");
  std::ofstream(junk) << "hello";
  EXPECT_EQ(run({}, {junk}), kExitBadInput);
  EXPECT_EQ(err_.str(),
            "ncclrec-analyze: " + junk + ": not an ncclrec black box or dump (bad magic)\n");

  // Inside a directory an unreadable recording is a warning; the rest is listed.
  std::ofstream(dir_.file("junk.bbox")) << "junk";
  EXPECT_EQ(run({}), kExitOk);
  EXPECT_EQ(err_.str(), "ncclrec-analyze: warning: " + dir_.file("junk.bbox") +
                            ": not an ncclrec black box or dump (bad magic)\n");
  EXPECT_EQ(count("== rank"), 2u);
}

TEST(CallSiteTest, PrefersSymbolsThenModuleThenAddress) {
  format::RankData r;
  format::EventRecord e;
  EXPECT_EQ(callSite(r, e), "-");
  e.setStackId(3);
  EXPECT_EQ(callSite(r, e), "-");
  format::Stack s;
  s.frames.push_back(format::Frame{0x1000, "", 0, "", "", 0});
  r.stacks[3] = s;
  EXPECT_EQ(callSite(r, e), "0x1000");
  r.stacks[3].frames[0].module = "/lib/libx.so";
  r.stacks[3].frames[0].module_offset = 0x20;
  EXPECT_EQ(callSite(r, e), "libx.so+0x20");
  r.stacks[3].frames.push_back(format::Frame{0x2000, "/bin/app", 0x10, "main", "", 0});
  EXPECT_EQ(callSite(r, e), "main");
}

}  // namespace
}  // namespace ncclrec::analyzer
