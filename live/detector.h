// Live hang detection from the black boxes (issue 17): what cxxrun's supervisor and ncclrec-watch
// run every half second on a live Snapshot (live/collector.h reads the black boxes incrementally).
//
// A rank is *blocked* when it has an incomplete NCCL op, *in host code* when every op it issued
// completed, *dead* when it exited, crashed, is gone or its heartbeat stopped. The job *stalls*
// when some rank is blocked and no rank issued or completed an op since `since_ns`. What the
// stall is decides how long to wait before calling it a hang:
//   kCertain      every rank is blocked or dead, and no pending op can complete: an op whose
//                 counterparts differ (op, count, type, root), a counterpart that is dead, a peer
//                 blocked elsewhere without having issued its side (a cycle, a skipped or extra
//                 op). Decided once nothing moved for `confirm_s`.
//   kSlow         the pending ops are all there and agree, yet nothing completes (a device or
//                 network fault): factor x the longest recent gap between completions on those
//                 communicators (or the time the pending ops' size takes at 1 GB/s, when
//                 longer), at least floor_s, at most timeout_s.
//   kWaitHost     blocked ranks wait for a rank in host code (a checkpoint, a data loader, a
//                 stuck loop): an early warning at warn time, the verdict only at the host
//                 threshold (learned from the job's own longest host gaps, at least
//                 host_stall_s, at most timeout_s); timeout_s while the awaited rank has not
//                 completed any op yet (start-up: one rank loading data or a model).
//   kWaitUnknown  they wait for ranks this view does not show (another node's, without a shared
//                 NCCLREC_DIR; a member of a creation that made no NCCL call yet), or in an op
//                 whose pairing is not tracked (group end): the early warning as kWaitHost, the
//                 verdict at timeout_s; for a creation every member joined (only its bootstrap
//                 is left), at init_stall_s.
// NCCLREC_TIMEOUT set in the environment is the fixed rule of the old watchdog for every kind but
// kCertain: a hang when the stall is that old.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "live/snapshot.h"

namespace ncclrec::live {

struct DetectorParams {
  double confirm_s = 1;      // kCertain: nothing moved for this long
  double floor_s = 2;        // NCCLREC_STALL_FLOOR
  double factor = 4;         // NCCLREC_STALL_FACTOR
  double host_warn_s = 5;    // NCCLREC_HOST_WARN: the earliest host-stall warning
  double host_stall_s = 30;  // NCCLREC_HOST_STALL: the least host-stall threshold
  double init_stall_s = 30;  // NCCLREC_INIT_STALL: a creation every member joined, unfinished
  double timeout_s = 60;     // NCCLREC_TIMEOUT: the upper bound of every threshold
  bool timeout_set = false;  // NCCLREC_TIMEOUT came from the environment: the fixed rule
  // From the NCCLREC_* environment (format::paramValue); a bad value keeps the default and is
  // named in *problem ("NCCLREC_STALL_FLOOR='x' is not a number of seconds; using 2").
  static DetectorParams fromEnvironment(std::string* problem);
};

enum class StallKind { kNone, kCertain, kSlow, kWaitHost, kWaitUnknown };
std::string_view stallKindName(StallKind kind);  // "none", "certain", "slow", "host", "unknown"

struct Assessment {
  StallKind kind = StallKind::kNone;
  int64_t since_ns = 0;      // the newest call or completion of any rank: when the stall began
  double stalled_s = 0;      // now - since_ns
  double warn_after_s = 0;   // kWaitHost, kWaitUnknown: when the early warning is due
  double hang_after_s = 0;   // when it is a hang
  std::vector<int> waiting;  // global ranks blocked, ascending
  std::vector<int> awaited;  // global ranks they wait for (in host code, dead, deviating)
  std::string why;           // one line, e.g. "ranks 0,1,3 wait in ncclAllReduce #41 on comm
                             // 3f2a0c11 for rank 2, in host code since its ncclAllReduce #40"
};

// The state of `snapshot` (its ranks, analysis and clock) under `params`. Pure.
Assessment assess(const Snapshot& snapshot, const DetectorParams& params);

struct DetectorEvent {
  // kSnapshot: no line; the tool asks every rank for a thread snapshot (live/snapshot_request.h),
  // a second before a host stall's warning, so that the warning can say where the awaited rank is.
  enum class Type { kWarning, kResumed, kHang, kSnapshot };
  Type type = Type::kWarning;
  std::string line;  // one line, printed after the tool's name ("cxxrun: "), no newline
  Assessment assessment;
};

// assess() over successive snapshots: says each warning once, says when a warned stall resumed,
// and says kHang once per stall (a new stall, after progress, may hang again).
class Detector {
 public:
  explicit Detector(DetectorParams params) : params_(params) {}
  std::vector<DetectorEvent> step(const Snapshot& snapshot);
  const DetectorParams& params() const { return params_; }
  // What the last step() assessed (kNone before any).
  const Assessment& last() const { return last_; }

 private:
  DetectorParams params_;
  Assessment last_;
  int64_t stall_since_ns_ = 0;  // the stall being watched, 0 when none
  bool warned_ = false;
  bool hung_ = false;
  bool asked_snapshot_ = false;
};

}  // namespace ncclrec::live
