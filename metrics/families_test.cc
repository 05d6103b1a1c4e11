#include "metrics/families.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "live/testing/fixtures.h"
#include "metrics/exporter.h"

namespace ncclrec::metrics {
namespace {

using live::testing::kCommWorld;

// "name{a=\"x\",b=\"y\"}" -> value, for every sample (histograms: count only).
std::map<std::string, double> samples(const std::vector<prometheus::MetricFamily>& families) {
  std::map<std::string, double> out;
  for (const auto& f : families) {
    for (const auto& m : f.metric) {
      std::string key = f.name + "{";
      for (size_t i = 0; i < m.label.size(); ++i)
        key += (i ? "," : "") + m.label[i].name + "=\"" + m.label[i].value + "\"";
      key += "}";
      const double v = f.type == prometheus::MetricType::Counter ? m.counter.value
                       : f.type == prometheus::MetricType::Histogram
                           ? double(m.histogram.sample_count)
                           : m.gauge.value;
      EXPECT_TRUE(out.emplace(key, v).second) << "duplicate series " << key;
    }
  }
  return out;
}

struct Built {
  live::Snapshot snapshot = live::testing::hangSnapshot();
  JobView job;
  OpCounts counts;
  Histograms histograms;
  std::vector<prometheus::MetricFamily> families;
  explicit Built(const std::optional<Report>& report = std::nullopt) {
    job = viewJob(snapshot, live::DetectorParams{}, report);
    counts.calls[{kCommWorld, format::OpType::kAllReduce}] = 13;
    counts.completed[{kCommWorld, format::OpType::kAllReduce}] = 12;
    counts.calls[{0, format::OpType::kGetUniqueId}] = 1;
    counts.events = 20;
    counts.uncounted = 6;
    histograms[{"fixture", "node0", format::OpType::kAllReduce, 0}].observe(0.0015);
    histograms[{"fixture", "node0", format::OpType::kAllReduce, 0}].observe(2);
    ScrapeInput in;
    in.snapshot = &snapshot;
    in.job = &job;
    in.counts.assign(snapshot.ranks.size(), nullptr);
    in.counts[0] = &counts;
    in.histograms = &histograms;
    in.boxes = 6;
    families = buildFamilies(in);
  }
};

TEST(FamiliesTest, EveryFamilyIsInTheCatalogInItsOrderAndEverySeriesIsUnique) {
  const Built b;
  size_t at = 0;
  for (const auto& f : b.families) {
    bool found = false;
    for (; at < allMetrics().size() && !found; ++at) found = allMetrics()[at].name == f.name;
    EXPECT_TRUE(found) << f.name << " is not in the catalog, or out of its order";
  }
  samples(b.families);
}

TEST(FamiliesTest, TheHangAndEachRanksStateAreOneHotStateSets) {
  const auto s = samples(Built().families);
  EXPECT_EQ(s.at("ncclrec_job_hang_state{job_id=\"fixture\",state=\"hang\"}"), 1);
  EXPECT_EQ(s.at("ncclrec_job_hang_state{job_id=\"fixture\",state=\"stalled\"}"), 0);
  EXPECT_EQ(s.at("ncclrec_job_hang_state{job_id=\"fixture\",state=\"none\"}"), 0);
  const auto state = [&](const char* host, int rank, const char* st) {
    return s.at(std::string("ncclrec_rank_state{job_id=\"fixture\",host=\"") + host + "\",rank=\"" +
                std::to_string(rank) + "\",state=\"" + st + "\"}");
  };
  EXPECT_EQ(state("node0", 0, "blocked"), 1);
  EXPECT_EQ(state("node0", 0, "running"), 0);
  EXPECT_EQ(state("node0", 3, "in_host"), 1);
  EXPECT_EQ(state("node1", 4, "exited"), 1);
  EXPECT_EQ(state("node1", 5, "crashed"), 1);
  for (int r = 0; r < 6; ++r) {
    double sum = 0;
    for (std::string_view st : kRankStates)
      sum += state(r < 4 ? "node0" : "node1", r, std::string(st).c_str());
    EXPECT_EQ(sum, 1) << "rank " << r;
  }
  EXPECT_EQ(s.at("ncclrec_job_stall_seconds{job_id=\"fixture\"}"), 80);
  EXPECT_EQ(s.at("ncclrec_job_stall_info{job_id=\"fixture\",kind=\"certain\",waiting=\"0-2\","
                 "awaited=\"3-4\"}"),
            1);
  EXPECT_EQ(s.at("ncclrec_rank_awaited{job_id=\"fixture\",host=\"node0\",rank=\"3\"}"), 1);
  EXPECT_EQ(
      s.at("ncclrec_rank_oldest_pending_seconds{job_id=\"fixture\",host=\"node0\",rank=\"1\"}"),
      80);
  EXPECT_EQ(s.at("ncclrec_job_ranks{job_id=\"fixture\"}"), 6);
  // No report yet: no verdict.
  for (const auto& [key, v] : s) EXPECT_EQ(key.find("ncclrec_job_verdict_info"), std::string::npos);
}

TEST(FamiliesTest, TheVerdictNamesItsClassAndCulprits) {
  Report r;
  r.run_id = "fixture";
  r.reason = "hang";
  r.verdict_class = "rank_exited";
  r.culprits = {4};
  r.mtime_ns = live::testing::kT0 + 90'000'000'000;
  const auto s = samples(Built(r).families);
  EXPECT_EQ(s.at("ncclrec_job_verdict_info{job_id=\"fixture\",class=\"rank_exited\",culprits=\"4\","
                 "reason=\"hang\"}"),
            1);
  EXPECT_EQ(s.at("ncclrec_rank_culprit{job_id=\"fixture\",host=\"node1\",rank=\"4\"}"), 1);
  EXPECT_EQ(s.at("ncclrec_rank_culprit{job_id=\"fixture\",host=\"node0\",rank=\"3\"}"), 0);
}

TEST(FamiliesTest, CountsByOpAndCommunicatorAndLagByCommunicator) {
  const auto s = samples(Built().families);
  const std::string rank0 = "job_id=\"fixture\",host=\"node0\",rank=\"0\"";
  EXPECT_EQ(s.at("ncclrec_rank_calls_total{" + rank0 +
                 ",comm=\"a11ce00000000001\",op=\"ncclAllReduce\"}"),
            13);
  EXPECT_EQ(s.at("ncclrec_rank_calls_total{" + rank0 + ",comm=\"none\",op=\"ncclGetUniqueId\"}"),
            1);
  EXPECT_EQ(s.at("ncclrec_rank_completed_total{" + rank0 +
                 ",comm=\"a11ce00000000001\",op=\"ncclAllReduce\"}"),
            12);
  EXPECT_EQ(s.at("ncclrec_rank_events_total{" + rank0 + "}"), 20);
  EXPECT_EQ(s.at("ncclrec_rank_uncounted_events_total{" + rank0 + "}"), 6);
  // Rank 1 was not counted: no counters for it, its gauges are there.
  EXPECT_FALSE(
      s.contains("ncclrec_rank_events_total{job_id=\"fixture\",host=\"node0\",rank=\"1\"}"));
  // Ranks 3 and 4 issued 12 of the world's 13 collectives.
  EXPECT_EQ(s.at("ncclrec_comm_rank_lag{job_id=\"fixture\",comm=\"a11ce00000000001\","
                 "host=\"node0\",rank=\"3\"}"),
            1);
  EXPECT_EQ(s.at("ncclrec_comm_rank_lag{job_id=\"fixture\",comm=\"a11ce00000000001\","
                 "host=\"node0\",rank=\"0\"}"),
            0);
  EXPECT_EQ(s.at("ncclrec_comm_leader_collectives{job_id=\"fixture\",comm=\"a11ce00000000001\"}"),
            13);
}

TEST(FamiliesTest, DurationsAreAHistogramWithCumulativeBuckets) {
  const Built b;
  const prometheus::MetricFamily* h = nullptr;
  for (const auto& f : b.families)
    if (f.name == "ncclrec_op_duration_seconds") h = &f;
  ASSERT_NE(h, nullptr);
  ASSERT_EQ(h->metric.size(), 1u);
  const auto& m = h->metric[0];
  EXPECT_EQ(m.label.back().value, "<=4KiB");
  EXPECT_EQ(m.histogram.sample_count, 2u);
  EXPECT_DOUBLE_EQ(m.histogram.sample_sum, 2.0015);
  ASSERT_EQ(m.histogram.bucket.size(), std::size(kDurationBuckets));
  EXPECT_EQ(m.histogram.bucket[1].cumulative_count, 0u);  // <= 200 us
  EXPECT_EQ(m.histogram.bucket[3].cumulative_count, 1u);  // <= 4 ms
  EXPECT_EQ(m.histogram.bucket[7].cumulative_count, 1u);  // <= 1 s
  EXPECT_EQ(m.histogram.bucket[8].cumulative_count, 2u);  // <= 4 s
  const std::string text = toText(b.families);
  EXPECT_NE(text.find("# TYPE ncclrec_op_duration_seconds histogram\n"), std::string::npos);
  EXPECT_NE(text.find("ncclrec_op_duration_seconds_bucket{job_id=\"fixture\",host=\"node0\","
                      "op=\"ncclAllReduce\",size=\"<=4KiB\",le=\"+Inf\"} 2\n"),
            std::string::npos)
      << text;
}

TEST(FamiliesTest, SizeClassesAndBucketsMeanAtMost) {
  EXPECT_EQ(sizeClass(0), 0u);
  EXPECT_EQ(sizeClass(4096), 0u);
  EXPECT_EQ(sizeClass(4097), 1u);
  EXPECT_EQ(sizeClass(1e12), std::size(kSizeLabels) - 1);
  DurationHistogram h;
  h.observe(1);     // <= 1 s exactly
  h.observe(1000);  // past the last bound
  EXPECT_EQ(h.buckets[7], 1u);
  EXPECT_EQ(h.buckets.back(), 1u);
}

}  // namespace
}  // namespace ncclrec::metrics
