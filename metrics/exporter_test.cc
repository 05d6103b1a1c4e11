#include "metrics/exporter.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "base/clock.h"
#include "base/text.h"
#include "format/testing/bbox_builder.h"
#include "format/testing/temp_dir.h"
#include "live/testing/live_bbox.h"

namespace ncclrec::metrics {
namespace {

using format::EventState;
using format::OpType;
using format::testing::BboxBuilder;
using format::testing::makeCollective;
using format::testing::TempDir;
using live::testing::LiveBbox;

constexpr uint64_t kComm = 0xc0ffee0000000001ull;
constexpr int64_t kSecond = 1'000'000'000;

// Two live ranks of run "job1" on this host: both completed all-reduces #1-#3; rank 0 has waited
// in #4 for `wait_s` seconds, rank 1 is in host code since #3.
struct Job {
  TempDir dir;
  std::vector<std::unique_ptr<LiveBbox>> boxes;
  int64_t now = base::realtimeNs();

  explicit Job(double wait_s, const char* run_id = "job1") {
    const int64_t t0 = now - 10 * kSecond;
    for (int r = 0; r < 2; ++r) {
      BboxBuilder b;
      b.header()->pid = 4'000'000 + r;  // no such process: the fresh heartbeat keeps it alive
      b.header()->global_rank = r;
      b.header()->world_size = 2;
      b.header()->local_rank = r;
      b.header()->heartbeat_ns = now;
      b.header()->start_realtime_ns = t0;
      std::strncpy(b.header()->host, base::hostName().c_str(), sizeof(b.header()->host) - 1);
      std::strncpy(b.header()->run_id, run_id, sizeof(b.header()->run_id) - 1);
      format::CommRecord c{};
      c.comm_id = kComm;
      c.rank = r;
      c.nranks = 2;
      c.coll_seq = r == 0 ? 4 : 3;
      c.state = format::kCommInitialized;
      b.addComm(c);
      const std::string path = dir.path() + "/h." + std::to_string(r) + ".bbox";
      boxes.push_back(LiveBbox::create(path, b));
      for (uint64_t s = 1; s <= 3; ++s) {
        boxes.back()->addEvent(makeCollective(OpType::kAllReduce, kComm, r, 2, s, 1024,
                                              t0 + int64_t(s) * kSecond / 10));
      }
    }
    format::Event pending = makeCollective(OpType::kAllReduce, kComm, 0, 2, 4, 1024,
                                           now - static_cast<int64_t>(wait_s * 1e9));
    pending.state = static_cast<uint8_t>(EventState::kEnqueued);
    pending.end_ns = 0;
    boxes[0]->addEvent(pending);
  }
  ExporterOptions options() const {
    ExporterOptions o;
    o.dir = dir.path();
    return o;
  }
};

TEST(ExporterTest, ServesTheLiveStateOfTheRanksInADirectory) {
  Job job(5);
  Exporter e(job.options());
  const std::string text = toText(e.collectAt(job.now));
  const std::string rank0 = "job_id=\"job1\",host=\"" + base::hostName() + "\",rank=\"0\"";
  EXPECT_NE(text.find("ncclrec_rank_calls_total{" + rank0 +
                      ",comm=\"c0ffee0000000001\",op=\"ncclAllReduce\"} 4"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("ncclrec_rank_completed_total{" + rank0 +
                      ",comm=\"c0ffee0000000001\",op=\"ncclAllReduce\"} 3"),
            std::string::npos);
  // Rank 0 waits for rank 1, in host code: stalled, not a hang yet.
  EXPECT_NE(text.find("ncclrec_job_hang_state{job_id=\"job1\",state=\"stalled\"} 1"),
            std::string::npos);
  EXPECT_NE(text.find("ncclrec_rank_state{" + rank0 + ",state=\"blocked\"} 1"), std::string::npos);
  EXPECT_NE(text.find("ncclrec_job_stall_info{job_id=\"job1\",kind=\"host\",waiting=\"0\","
                      "awaited=\"1\"} 1"),
            std::string::npos);
  // Six completed all-reduces of 4 KiB, timed.
  EXPECT_NE(text.find("ncclrec_op_duration_seconds_count{job_id=\"job1\",host=\"" +
                      base::hostName() + "\",op=\"ncclAllReduce\",size=\"<=4KiB\"} 6"),
            std::string::npos);
  EXPECT_NE(text.find("ncclrec_exporter_black_boxes 2"), std::string::npos);
  EXPECT_TRUE(e.notes().empty());
}

TEST(ExporterTest, TheReportMakesItAHangAndNamesTheCulprit) {
  Job job(5);
  std::ofstream(job.dir.path() + "/report.json")
      << R"({"run_id": "job1", "attempt": 0, "reason": "hang",
             "verdict": {"class": "rank_stuck_in_host", "ranks": [1]}})";
  Exporter e(job.options());
  const std::string text = toText(e.collectAt(job.now));
  EXPECT_NE(text.find("ncclrec_job_hang_state{job_id=\"job1\",state=\"hang\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("ncclrec_job_verdict_info{job_id=\"job1\",class=\"rank_stuck_in_host\","
                      "culprits=\"1\",reason=\"hang\"} 1"),
            std::string::npos);
  EXPECT_NE(text.find("ncclrec_rank_culprit{job_id=\"job1\",host=\"" + base::hostName() +
                      "\",rank=\"1\"} 1"),
            std::string::npos);
}

TEST(ExporterTest, CountsGrowAcrossScrapesAndHistogramsNeverShrink) {
  Job job(0.1);
  Exporter e(job.options());
  (void)e.collectAt(job.now);
  job.boxes[1]->addEvent(makeCollective(OpType::kAllReduce, kComm, 1, 2, 4, 1024, job.now));
  const std::string text = toText(e.collectAt(job.now + kSecond / 10));
  const std::string rank1 = "job_id=\"job1\",host=\"" + base::hostName() + "\",rank=\"1\"";
  EXPECT_NE(text.find("ncclrec_rank_calls_total{" + rank1 +
                      ",comm=\"c0ffee0000000001\",op=\"ncclAllReduce\"} 4"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("op=\"ncclAllReduce\",size=\"<=4KiB\"} 7"), std::string::npos);
}

TEST(ExporterTest, TwoAsksWithinASecondShareOneComputation) {
  Job job(0.1);
  Exporter e(job.options());
  const auto first = toText(e.Collect());
  job.boxes[1]->addEvent(makeCollective(OpType::kAllReduce, kComm, 1, 2, 4, 1024, job.now));
  EXPECT_EQ(toText(e.Collect()), first);
}

TEST(ExporterTest, BeforeAnyRankTheJobIsTheLaunchersAndFilesItCannotReadAreNoted) {
  TempDir dir;
  std::ofstream(dir.path() + "/junk.bbox") << std::string(8192, 'x');
  ExporterOptions o;
  o.dir = dir.path();
  o.job_id = "cxxrun-1";
  Exporter e(o);
  const std::string text = toText(e.collectAt(base::realtimeNs()));
  EXPECT_NE(text.find("ncclrec_job_hang_state{job_id=\"cxxrun-1\",state=\"none\"} 1"),
            std::string::npos)
      << text;
  ASSERT_EQ(e.notes().size(), 1u);
  EXPECT_NE(e.notes()[0].find("junk.bbox: not an ncclrec black box"), std::string::npos);
}

}  // namespace
}  // namespace ncclrec::metrics
