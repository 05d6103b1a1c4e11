// Every metric ncclrec exports (docs/metrics.md), declared once: name, kind, labels, help. The
// exporter builds its families from this table (families.h), docs/metrics.md is checked against it,
// and the Grafana dashboard and the alert rules are checked to query only names from it
// (metrics/catalog_test.cc).
//
// Cardinality is bounded by the job's shape, never by its length: labels name a job, a host, a
// rank, a communicator, an op type or a size class, never one op or one sequence number.
#pragma once

#include <span>
#include <string_view>

namespace ncclrec::metrics {

// How a metric appears in the Prometheus text format (0.0.4): a state set is a gauge with a
// `state` label whose one true state is 1 and the others 0; an info metric is a gauge named
// *_info, always 1, whose labels carry the information (OpenMetrics' StateSet and Info).
enum class Kind { kCounter, kGauge, kStateSet, kInfo, kHistogram };

struct MetricSpec {
  std::string_view name;
  Kind kind;
  std::string_view labels;  // comma-separated, in the order they are written
  std::string_view help;
};

// X(id, name, kind, labels, help)
#define NCCLREC_METRICS(X)                                                                         \
  X(kRankInfo, "ncclrec_rank_info", kInfo, "job_id,host,rank,pid,local_rank,world_size",           \
    "A recorded process: its pid, local rank and world size")                                      \
  X(kRankState, "ncclrec_rank_state", kStateSet, "job_id,host,rank,state",                         \
    "What the rank is doing: running, blocked (in an NCCL op while the job is stalled), in_host "  \
    "(in its own code while the job is stalled), exited, crashed, unresponsive")                   \
  X(kRankCalls, "ncclrec_rank_calls_total", kCounter, "job_id,host,rank,comm,op",                  \
    "NCCL calls the rank issued, by op and communicator (comm \"none\": calls without one)")       \
  X(kRankCompleted, "ncclrec_rank_completed_total", kCounter, "job_id,host,rank,comm,op",          \
    "NCCL ops of the rank that completed, by op and communicator")                                 \
  X(kRankEvents, "ncclrec_rank_events_total", kCounter, "job_id,host,rank",                        \
    "Every NCCL call the rank recorded, counted or not")                                           \
  X(kRankUncounted, "ncclrec_rank_uncounted_events_total", kCounter, "job_id,host,rank",           \
    "Calls that left the black box's ring before the exporter read them: in events_total, not "    \
    "in calls_total")                                                                              \
  X(kRankOldestPending, "ncclrec_rank_oldest_pending_seconds", kGauge, "job_id,host,rank",         \
    "Age of the rank's oldest incomplete NCCL op; 0 when every op completed")                      \
  X(kRankLastProgress, "ncclrec_rank_last_progress_timestamp_seconds", kGauge, "job_id,host,rank", \
    "When the rank last entered an NCCL call or saw one complete (Unix time)")                     \
  X(kRankHeartbeat, "ncclrec_rank_heartbeat_timestamp_seconds", kGauge, "job_id,host,rank",        \
    "When the rank's recorder watchdog last ran (Unix time)")                                      \
  X(kRankSlowScore, "ncclrec_rank_slow_score", kGauge, "job_id,host,rank",                         \
    "Share (0-1) of the other ranks' waiting in recent collectives spent waiting for this rank "   \
    "to arrive; 0 unless it was last more often than chance and that waiting took 100 ms and 5 % " \
    "of their time")                                                                               \
  X(kRankAwaited, "ncclrec_rank_awaited", kGauge, "job_id,host,rank",                              \
    "1 when the live detector finds the blocked ranks waiting for this one, else 0")               \
  X(kRankCulprit, "ncclrec_rank_culprit", kGauge, "job_id,host,rank",                              \
    "1 when the analyzer's verdict names this rank, else 0")                                       \
  X(kCommRankLag, "ncclrec_comm_rank_lag", kGauge, "job_id,comm,host,rank",                        \
    "Collectives the rank is behind the communicator's most advanced rank")                        \
  X(kCommLeader, "ncclrec_comm_leader_collectives", kGauge, "job_id,comm",                         \
    "Collectives the communicator's most advanced rank issued")                                    \
  X(kJobHangState, "ncclrec_job_hang_state", kStateSet, "job_id,state",                            \
    "none; stalled (a rank blocked and no progress for a second); hang (the live detector's "      \
    "rule, or a hang report)")                                                                     \
  X(kJobStall, "ncclrec_job_stall_seconds", kGauge, "job_id",                                      \
    "Seconds since the last progress while some rank is blocked in an NCCL op; 0 when none is")    \
  X(kJobHangAfter, "ncclrec_job_hang_after_seconds", kGauge, "job_id",                             \
    "Stall length at which the live detector calls the current stall a hang; 0 when none")         \
  X(kJobStallInfo, "ncclrec_job_stall_info", kInfo, "job_id,kind,waiting,awaited",                 \
    "The current stall as the live detector sees it: kind (certain, slow, host, unknown), ranks "  \
    "blocked, ranks they wait for")                                                                \
  X(kJobVerdictInfo, "ncclrec_job_verdict_info", kInfo, "job_id,class,culprits,reason",            \
    "The analyzer's verdict from the job's report.json: class, culprit ranks, and why the "        \
    "report was made (hang, failure, interrupt)")                                                  \
  X(kJobSlowScore, "ncclrec_job_slow_rank_score", kGauge, "job_id",                                \
    "The highest ncclrec_rank_slow_score of the job")                                              \
  X(kJobRanks, "ncclrec_job_ranks", kGauge, "job_id", "Ranks this exporter reads")                 \
  X(kOpDuration, "ncclrec_op_duration_seconds", kHistogram, "job_id,host,op,size",                 \
    "Durations of the completed collectives and sends/receives of the host's ranks, by op and "    \
    "size class, where completion is timed")                                                       \
  X(kExporterBoxes, "ncclrec_exporter_black_boxes", kGauge, "",                                    \
    "Black boxes the exporter read at this scrape")                                                \
  X(kExporterCollect, "ncclrec_exporter_collect_seconds", kGauge, "",                              \
    "CPU time the exporter spent on this scrape's reading and analysis")

enum class Metric {
#define NCCLREC_METRIC_ID(id, name, kind, labels, help) id,
  NCCLREC_METRICS(NCCLREC_METRIC_ID)
#undef NCCLREC_METRIC_ID
};

inline constexpr MetricSpec kMetricSpecs[] = {
#define NCCLREC_METRIC_SPEC(id, name, kind, labels, help) \
  MetricSpec{name, Kind::kind, labels, help},
    NCCLREC_METRICS(NCCLREC_METRIC_SPEC)
#undef NCCLREC_METRIC_SPEC
};

inline std::span<const MetricSpec> allMetrics() { return kMetricSpecs; }
inline const MetricSpec& specOf(Metric m) { return kMetricSpecs[static_cast<size_t>(m)]; }
std::string_view kindName(Kind kind);  // "counter", "gauge", "stateset", "info", "histogram"

// The states of ncclrec_rank_state and ncclrec_job_hang_state, in the order they are written.
inline constexpr std::string_view kRankStates[] = {"running", "blocked", "in_host",
                                                   "exited",  "crashed", "unresponsive"};
inline constexpr std::string_view kHangStates[] = {"none", "stalled", "hang"};

// Upper bounds (seconds) of ncclrec_op_duration_seconds' buckets, and of its size classes
// (bytes; the label is "<=4KiB" ... "<=256MiB", then ">256MiB").
inline constexpr double kDurationBuckets[] = {50e-6, 200e-6, 1e-3, 4e-3, 16e-3, 64e-3,
                                              0.25,  1,      4,    16,   64};
inline constexpr double kSizeClasses[] = {4096, 65536, 1048576, 16777216, 268435456};
inline constexpr std::string_view kSizeLabels[] = {"<=4KiB",  "<=64KiB",  "<=1MiB",
                                                   "<=16MiB", "<=256MiB", ">256MiB"};
// The size class of an op moving `bytes`: an index into kSizeLabels.
size_t sizeClass(double bytes);

}  // namespace ncclrec::metrics
