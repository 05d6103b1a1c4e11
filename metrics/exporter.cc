#include "metrics/exporter.h"

#include <prometheus/text_serializer.h>

#include <ctime>
#include <map>
#include <sstream>
#include <utility>

#include "base/clock.h"
#include "live/collector.h"
#include "metrics/families.h"
#include "metrics/job_view.h"
#include "metrics/op_counter.h"
#include "metrics/report_file.h"

namespace ncclrec::metrics {
namespace {

double threadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

}  // namespace

struct Exporter::State {
  explicit State(const ExporterOptions& o) : options(o), collector(collectorOptions(o)) {}

  static live::CollectorOptions collectorOptions(const ExporterOptions& o) {
    live::CollectorOptions c;
    c.dir = o.dir;
    c.run_id = o.run_id;
    c.hang_after_s = o.params.timeout_s;
    c.newest_per_rank = true;
    return c;
  }

  struct Counted {
    std::unique_ptr<OpCounter> counter;
    std::string error;
    bool starting = false;
  };

  ExporterOptions options;
  live::Collector collector;
  ReportReader reports;
  std::map<std::string, Counted> counters;  // by black box path and process start
  Histograms histograms;                    // since the exporter started, never reset
  std::vector<std::string> notes;
  int64_t last_ns = 0;
  std::vector<prometheus::MetricFamily> last;
};

Exporter::Exporter(ExporterOptions options) : state_(std::make_unique<State>(options)) {}

Exporter::~Exporter() = default;

std::vector<prometheus::MetricFamily> Exporter::Collect() const {
  const int64_t now = base::realtimeNs();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (state_->last_ns > 0 && now >= state_->last_ns &&
        static_cast<double>(now - state_->last_ns) < kReuseSeconds * 1e9) {
      return state_->last;
    }
  }
  return collectAt(now);
}

std::vector<prometheus::MetricFamily> Exporter::collectAt(int64_t now_ns) const {
  std::lock_guard<std::mutex> lock(mu_);
  state_->last = compute(now_ns);
  state_->last_ns = now_ns;
  return state_->last;
}

std::vector<std::string> Exporter::notes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_->notes;
}

std::vector<prometheus::MetricFamily> Exporter::compute(int64_t now_ns) const {
  State& st = *state_;
  const double cpu_start = threadCpuSeconds();
  const auto snapshot = newestJob(st.collector.collect(now_ns));
  st.notes = snapshot->notes;
  std::string problem;
  const std::optional<Report> report = st.reports.read(snapshot->dir, &problem);
  if (!problem.empty()) st.notes.push_back(problem);
  JobView job = viewJob(*snapshot, st.options.params, report);
  if (job.job_id.empty()) job.job_id = st.options.job_id;

  // Every rank's op counts, and the histograms their newly completed ops feed.
  ScrapeInput in;
  in.snapshot = snapshot.get();
  in.job = &job;
  in.counts.assign(snapshot->ranks.size(), nullptr);
  std::map<std::string, State::Counted> kept;
  for (size_t i = 0; i < snapshot->ranks.size(); ++i) {
    const live::RankEntry& r = snapshot->ranks[i];
    // By file and process start: a file made again under the same name is another black box.
    const std::string key = r.source + "@" + std::to_string(r.start_ns);
    auto it = st.counters.find(key);
    State::Counted c = it != st.counters.end() ? std::move(it->second) : State::Counted{};
    if (c.counter == nullptr) {
      auto opened = OpCounter::open(r.source, &c.starting);
      if (opened.ok()) {
        c.counter = std::move(opened).value();
      } else if (!c.starting) {
        st.notes.push_back(opened.status().message());
      }
    }
    if (c.counter != nullptr) {
      const std::string job_id = r.run_id.empty() ? job.job_id : r.run_id;
      c.counter->update([&](const TimedOp& op) {
        st.histograms[{job_id, r.host, op.op, sizeClass(op.bytes)}].observe(op.seconds);
      });
    }
    auto [at, added] = kept.emplace(key, std::move(c));
    in.counts[i] = at->second.counter != nullptr ? &at->second.counter->counts() : nullptr;
  }
  st.counters = std::move(kept);  // black boxes gone from the directory are let go
  // Only the job shown keeps its histograms: an exporter that outlives many jobs in one directory
  // would otherwise export every past job's forever.
  std::erase_if(st.histograms, [&](const auto& h) { return std::get<0>(h.first) != job.job_id; });
  in.histograms = &st.histograms;
  in.boxes = snapshot->ranks.size();
  in.collect_s = threadCpuSeconds() - cpu_start;
  return buildFamilies(in);
}

std::string toText(const std::vector<prometheus::MetricFamily>& families) {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

}  // namespace ncclrec::metrics
