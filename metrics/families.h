// The metric families of one scrape (catalog.h's names, kinds and labels), from what the exporter
// read: the job's snapshot and view (job_view.h), each rank's op counts (op_counter.h) and the
// duration histograms accumulated since the exporter started. Pure: the same input gives the
// same families, in catalog order, samples sorted by their labels.
#pragma once

#include <prometheus/metric_family.h>

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "live/snapshot.h"
#include "metrics/catalog.h"
#include "metrics/job_view.h"
#include "metrics/op_counter.h"

namespace ncclrec::metrics {

// One ncclrec_op_duration_seconds series: counts per bucket of kDurationBuckets (not cumulative),
// then the overflow.
struct DurationHistogram {
  std::vector<uint64_t> buckets = std::vector<uint64_t>(std::size(kDurationBuckets) + 1, 0);
  uint64_t count = 0;
  double sum = 0;
  void observe(double seconds);
};
// By job id, host, op and size class (an index into kSizeLabels).
using HistogramKey = std::tuple<std::string, std::string, format::OpType, size_t>;
using Histograms = std::map<HistogramKey, DurationHistogram>;

struct ScrapeInput {
  const live::Snapshot* snapshot = nullptr;
  const JobView* job = nullptr;
  std::vector<const OpCounts*> counts;  // parallel to snapshot->ranks; nullptr: not counted
  const Histograms* histograms = nullptr;
  size_t boxes = 0;      // black boxes read
  double collect_s = 0;  // CPU time of this scrape's reading
};

std::vector<prometheus::MetricFamily> buildFamilies(const ScrapeInput& in);

// "a11ce00000000001": a communicator's label; "none" for calls without one.
std::string commLabel(uint64_t comm_id);

}  // namespace ncclrec::metrics
