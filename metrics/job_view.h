// What the metrics say about a job, derived from one live snapshot (live/snapshot.h), the live
// detector's assessment of it (live/detector.h) and the job's hang report, when one was written.
// Pure functions: the hang decision is the detector's own (assess()), never re-derived here.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "live/detector.h"
#include "live/snapshot.h"
#include "metrics/report_file.h"

namespace ncclrec::metrics {

// ncclrec_rank_state's states, in kRankStates' order.
enum class RankState { kRunning, kBlocked, kInHost, kExited, kCrashed, kUnresponsive };
// ncclrec_job_hang_state's states, in kHangStates' order.
enum class HangState { kNone, kStalled, kHang };

// A live rank whose watchdog has not stamped its heartbeat for this long is unresponsive (a
// stopped or frozen process; the watchdog stamps it every NCCLREC_POLL_MS, 200 ms by default).
inline constexpr double kUnresponsiveAfterS = 10;

struct RankFacts {
  RankState state = RankState::kRunning;
  double oldest_pending_s = 0;  // 0 when every op completed
  double slow_score = 0;
  bool awaited = false;  // the detector finds blocked ranks waiting for it
  bool culprit = false;  // the report's verdict names it
};

struct JobView {
  std::string job_id;
  HangState hang = HangState::kNone;
  live::Assessment assessment;   // the detector's; kind kNone when no rank is blocked
  double stall_s = 0;            // assessment.stalled_s when a rank is blocked, else 0
  double hang_after_s = 0;       // assessment.hang_after_s when a rank is blocked, else 0
  std::optional<Report> report;  // the job's report, when it is about this job
  std::vector<RankFacts> ranks;  // parallel to the snapshot's ranks
  double slow_score = 0;         // the highest of the ranks'
};

// The job of the snapshot: its ranks' run id (the newest run's when the directory holds several).
// Its hang state is `hang` when the detector's rule holds (the stall lasted its hang_after_s, as
// Detector::step decides) or a report with reason "hang" was written for this run, `stalled` when
// some rank is blocked and nothing moved for params.confirm_s, else `none`. A rank is blocked or
// in_host only while the job is stalled or hung; otherwise an alive rank is running.
JobView viewJob(const live::Snapshot& snapshot, const live::DetectorParams& params,
                const std::optional<Report>& report);

// The snapshot restricted to one job: the ranks of the newest run id (the one whose rank started
// last), and of each (host, global rank) the process that started last; re-analyzed when it drops
// a rank, else `snapshot` itself.
std::shared_ptr<const live::Snapshot> newestJob(std::shared_ptr<const live::Snapshot> snapshot);

// Per rank (parallel to snapshot.ranks): the share of the other ranks' waiting spent waiting for
// it, over the recent collectives its communicators' ranks all completed (at least
// analyzer::kSlowMinOps of them; the analyzer's slow_rank measure, analyzer/health.h, on the live
// window). 0 unless that waiting is at least analyzer::kSlowMinWaitNs in all and
// analyzer::kSlowWaitOfSpan of the time those collectives span and the rank was last more often
// than chance allows (the analyzer's kSlowChance), or when not every member of the communicator
// is in the snapshot.
std::vector<double> slowScores(const live::Snapshot& snapshot);

}  // namespace ncclrec::metrics
