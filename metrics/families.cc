#include "metrics/families.h"

#include <algorithm>
#include <initializer_list>
#include <string_view>

#include "analyzer/verdict.h"
#include "base/text.h"

namespace ncclrec::metrics {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

MetricType typeOf(Kind kind) {
  switch (kind) {
    case Kind::kCounter:
      return MetricType::Counter;
    case Kind::kHistogram:
      return MetricType::Histogram;
    case Kind::kGauge:
    case Kind::kStateSet:
    case Kind::kInfo:
      break;
  }
  return MetricType::Gauge;
}

std::vector<std::string> labelNames(std::string_view labels) {
  std::vector<std::string> out;
  while (!labels.empty()) {
    const size_t comma = labels.find(',');
    out.emplace_back(labels.substr(0, comma));
    labels = comma == std::string_view::npos ? std::string_view() : labels.substr(comma + 1);
  }
  return out;
}

// One family of the catalog, its samples added with their label values in the catalog's order.
class Family {
 public:
  explicit Family(Metric m) : names_(labelNames(specOf(m).labels)) {
    const MetricSpec& spec = specOf(m);
    family_.name = std::string(spec.name);
    family_.help = std::string(spec.help);
    family_.type = typeOf(spec.kind);
  }
  ClientMetric& add(std::initializer_list<std::string> values) {
    ClientMetric& metric = family_.metric.emplace_back();
    size_t i = 0;
    for (const std::string& v : values) metric.label.push_back({names_.at(i++), v});
    return metric;
  }
  void gauge(std::initializer_list<std::string> values, double v) { add(values).gauge.value = v; }
  void counter(std::initializer_list<std::string> values, double v) {
    add(values).counter.value = v;
  }
  void moveTo(std::vector<MetricFamily>* out) { out->push_back(std::move(family_)); }

 private:
  std::vector<std::string> names_;
  MetricFamily family_;
};

double unixSeconds(int64_t ns) { return static_cast<double>(ns) / 1e9; }

struct RankLabels {
  std::string job, host, rank;
};

RankLabels labelsOf(const JobView& job, const live::RankEntry& r) {
  return {r.run_id.empty() ? job.job_id : r.run_id, r.host, std::to_string(r.global_rank)};
}

void rankFamilies(const ScrapeInput& in, std::vector<MetricFamily>* out) {
  const live::Snapshot& s = *in.snapshot;
  const JobView& job = *in.job;
  Family info(Metric::kRankInfo), state(Metric::kRankState), calls(Metric::kRankCalls),
      completed(Metric::kRankCompleted), events(Metric::kRankEvents),
      uncounted(Metric::kRankUncounted), pending(Metric::kRankOldestPending),
      progress(Metric::kRankLastProgress), heartbeat(Metric::kRankHeartbeat),
      slow(Metric::kRankSlowScore), awaited(Metric::kRankAwaited), culprit(Metric::kRankCulprit);
  for (size_t i = 0; i < s.ranks.size(); ++i) {
    const live::RankEntry& r = s.ranks[i];
    if (r.global_rank < 0) continue;  // not known yet: it would collide with its peers
    const RankFacts& f = job.ranks[i];
    const RankLabels l = labelsOf(job, r);
    info.gauge({l.job, l.host, l.rank, std::to_string(r.pid), std::to_string(r.local_rank),
                std::to_string(r.world_size)},
               1);
    for (size_t k = 0; k < std::size(kRankStates); ++k) {
      state.gauge({l.job, l.host, l.rank, std::string(kRankStates[k])},
                  static_cast<size_t>(f.state) == k ? 1 : 0);
    }
    if (const OpCounts* c = i < in.counts.size() ? in.counts[i] : nullptr) {
      for (const auto& [key, n] : c->calls) {
        calls.counter(
            {l.job, l.host, l.rank, commLabel(key.comm_id), std::string(format::opName(key.op))},
            static_cast<double>(n));
      }
      for (const auto& [key, n] : c->completed) {
        completed.counter(
            {l.job, l.host, l.rank, commLabel(key.comm_id), std::string(format::opName(key.op))},
            static_cast<double>(n));
      }
      events.counter({l.job, l.host, l.rank}, static_cast<double>(c->events));
      uncounted.counter({l.job, l.host, l.rank}, static_cast<double>(c->uncounted));
    }
    pending.gauge({l.job, l.host, l.rank}, f.oldest_pending_s);
    progress.gauge({l.job, l.host, l.rank}, unixSeconds(s.status[i].last_progress_ns));
    heartbeat.gauge({l.job, l.host, l.rank}, unixSeconds(r.heartbeat_ns));
    slow.gauge({l.job, l.host, l.rank}, f.slow_score);
    awaited.gauge({l.job, l.host, l.rank}, f.awaited ? 1 : 0);
    culprit.gauge({l.job, l.host, l.rank}, f.culprit ? 1 : 0);
  }
  for (Family* f : {&info, &state, &calls, &completed, &events, &uncounted, &pending, &progress,
                    &heartbeat, &slow, &awaited, &culprit}) {
    f->moveTo(out);
  }
}

void commFamilies(const ScrapeInput& in, std::vector<MetricFamily>* out) {
  const live::Snapshot& s = *in.snapshot;
  Family lag(Metric::kCommRankLag), leader(Metric::kCommLeader);
  for (const live::CommGroup& g : s.comms) {
    const std::string comm = commLabel(g.comm_id);
    leader.gauge({in.job->job_id, comm}, static_cast<double>(g.max_issued));
    for (const live::CommMember& m : g.members) {
      const live::RankEntry& r = s.ranks[m.rank];
      if (r.global_rank < 0) continue;
      const RankLabels l = labelsOf(*in.job, r);
      // A rank that closed the communicator is not behind on it.
      lag.gauge({l.job, comm, l.host, l.rank},
                m.ended ? 0 : static_cast<double>(g.max_issued - m.issued));
    }
  }
  lag.moveTo(out);
  leader.moveTo(out);
}

void jobFamilies(const ScrapeInput& in, std::vector<MetricFamily>* out) {
  const JobView& job = *in.job;
  Family hang(Metric::kJobHangState), stall(Metric::kJobStall), after(Metric::kJobHangAfter),
      stall_info(Metric::kJobStallInfo), verdict(Metric::kJobVerdictInfo),
      slow(Metric::kJobSlowScore), ranks(Metric::kJobRanks);
  if (!job.job_id.empty()) {
    for (size_t k = 0; k < std::size(kHangStates); ++k) {
      hang.gauge({job.job_id, std::string(kHangStates[k])},
                 static_cast<size_t>(job.hang) == k ? 1 : 0);
    }
    stall.gauge({job.job_id}, job.stall_s);
    after.gauge({job.job_id}, job.hang_after_s);
    if (job.hang != HangState::kNone && job.assessment.kind != live::StallKind::kNone) {
      stall_info.gauge({job.job_id, std::string(live::stallKindName(job.assessment.kind)),
                        analyzer::formatRanks(job.assessment.waiting),
                        analyzer::formatRanks(job.assessment.awaited)},
                       1);
    }
    if (job.report) {
      verdict.gauge(
          {job.job_id, job.report->verdict_class.empty() ? "none" : job.report->verdict_class,
           analyzer::formatRanks(job.report->culprits), job.report->reason},
          1);
    }
    slow.gauge({job.job_id}, job.slow_score);
    ranks.gauge({job.job_id}, static_cast<double>(in.snapshot->ranks.size()));
  }
  for (Family* f : {&hang, &stall, &after, &stall_info, &verdict, &slow, &ranks}) f->moveTo(out);
}

void histogramFamily(const ScrapeInput& in, std::vector<MetricFamily>* out) {
  Family durations(Metric::kOpDuration);
  if (in.histograms != nullptr) {
    for (const auto& [key, h] : *in.histograms) {
      const auto& [job, host, op, size] = key;
      ClientMetric& m = durations.add(
          {job, host, std::string(format::opName(op)), std::string(kSizeLabels[size])});
      m.histogram.sample_count = h.count;
      m.histogram.sample_sum = h.sum;
      uint64_t cumulative = 0;
      for (size_t b = 0; b < std::size(kDurationBuckets); ++b) {
        cumulative += h.buckets[b];
        m.histogram.bucket.push_back({cumulative, kDurationBuckets[b]});
      }
    }
  }
  durations.moveTo(out);
}

}  // namespace

void DurationHistogram::observe(double seconds) {
  const auto* end = std::end(kDurationBuckets);
  const size_t b = size_t(std::lower_bound(std::begin(kDurationBuckets), end, seconds) -
                          std::begin(kDurationBuckets));
  ++buckets[b];
  ++count;
  sum += seconds;
}

std::string commLabel(uint64_t comm_id) { return comm_id == 0 ? "none" : base::hex16(comm_id); }

std::vector<MetricFamily> buildFamilies(const ScrapeInput& in) {
  std::vector<MetricFamily> out;
  rankFamilies(in, &out);
  commFamilies(in, &out);
  jobFamilies(in, &out);
  histogramFamily(in, &out);
  Family boxes(Metric::kExporterBoxes), collect(Metric::kExporterCollect);
  boxes.gauge({}, static_cast<double>(in.boxes));
  collect.gauge({}, in.collect_s);
  boxes.moveTo(&out);
  collect.moveTo(&out);
  // Families without samples say nothing: left out, as client libraries do.
  std::erase_if(out, [](const MetricFamily& f) { return f.metric.empty(); });
  return out;
}

}  // namespace ncclrec::metrics
