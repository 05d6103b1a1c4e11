// The metrics of the black boxes in one directory, computed when asked (a scrape, a textfile
// write): the live snapshot (live::Collector, as ncclrec-top and the live detector read it), the
// detector's assessment and the job's report (job_view.h), every rank's op counts (op_counter.h)
// and the duration histograms they feed. Nothing runs between two asks; two asks within
// kReuseSeconds share one computation.
//
// Thread-safe: Collect() may be called from any thread (the HTTP server's, the textfile
// writer's); one computation runs at a time.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "live/detector.h"

namespace ncclrec::metrics {

struct ExporterOptions {
  // NCCLREC_DIR with black boxes, or cxxrun's tree (the newest run and attempt are read, as
  // ncclrec-top reads them: live/source_dir.h).
  std::string dir;
  std::string run_id;  // only this run's ranks; "" = the newest run in dir
  std::string job_id;  // the job's id before any rank recorded (cxxrun: its run id); "" = none
  live::DetectorParams params;
};

inline constexpr double kReuseSeconds = 1;

class Exporter : public prometheus::Collectable {
 public:
  explicit Exporter(ExporterOptions options);
  ~Exporter() override;
  Exporter(const Exporter&) = delete;
  Exporter& operator=(const Exporter&) = delete;

  // The families at this moment (CLOCK_REALTIME now), or those of an ask less than kReuseSeconds
  // ago.
  std::vector<prometheus::MetricFamily> Collect() const override;
  // The same families at `now_ns`, computed whatever the last ask: for tests.
  std::vector<prometheus::MetricFamily> collectAt(int64_t now_ns) const;
  // What could not be read at the last ask (files, report), one line each.
  std::vector<std::string> notes() const;

 private:
  struct State;
  std::vector<prometheus::MetricFamily> compute(int64_t now_ns) const;

  mutable std::mutex mu_;
  std::unique_ptr<State> state_;  // guarded by mu_
};

// Prometheus' text format (0.0.4) of `families`, as the HTTP endpoint serves it.
std::string toText(const std::vector<prometheus::MetricFamily>& families);

}  // namespace ncclrec::metrics
