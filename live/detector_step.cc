// Detector::step (what to say as a stall goes on) and the detector's knobs from the environment.
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "format/params_table.h"
#include "live/detector.h"

namespace ncclrec::live {
namespace {

constexpr double kSnapshotLeadS = 1;  // how long before a host stall's warning to ask for threads

std::string secondsText(double s) {
  char buf[32];
  snprintf(buf, sizeof(buf), s < 10 ? "%.1f s" : "%.0f s", s);
  return buf;
}

void readSeconds(const char* name, double* out, std::string* problem) {
  const std::string v = format::paramValue(name);
  char* end = nullptr;
  const double d = strtod(v.c_str(), &end);
  if (!v.empty() && end != nullptr && *end == '\0' && std::isfinite(d) && d > 0) {
    *out = d;
    return;
  }
  if (problem->empty()) {
    *problem =
        std::string(name) + "='" + v + "' is not a number of seconds; using " + secondsText(*out);
  }
}

}  // namespace

DetectorParams DetectorParams::fromEnvironment(std::string* problem) {
  DetectorParams p;
  problem->clear();
  readSeconds("NCCLREC_STALL_FLOOR", &p.floor_s, problem);
  readSeconds("NCCLREC_STALL_FACTOR", &p.factor, problem);
  readSeconds("NCCLREC_HOST_WARN", &p.host_warn_s, problem);
  readSeconds("NCCLREC_HOST_STALL", &p.host_stall_s, problem);
  readSeconds("NCCLREC_INIT_STALL", &p.init_stall_s, problem);
  readSeconds("NCCLREC_TIMEOUT", &p.timeout_s, problem);
  const char* set = getenv("NCCLREC_TIMEOUT");
  p.timeout_set = set != nullptr && *set != '\0';
  return p;
}

std::vector<DetectorEvent> Detector::step(const Snapshot& snapshot) {
  std::vector<DetectorEvent> out;
  Assessment a = assess(snapshot, params_);
  last_ = a;
  const bool same_stall = a.kind != StallKind::kNone && a.since_ns == stall_since_ns_;
  if (!same_stall && stall_since_ns_ != 0) {
    // Progress since the stall being watched: say so when its warning was said.
    if (warned_ && !hung_) {
      const int64_t resumed_ns =
          a.kind == StallKind::kNone ? snapshot.summary.last_progress_ns : a.since_ns;
      DetectorEvent e;
      e.type = DetectorEvent::Type::kResumed;
      e.line =
          "resumed after " + secondsText(static_cast<double>(resumed_ns - stall_since_ns_) / 1e9);
      out.push_back(std::move(e));
    }
    stall_since_ns_ = 0;
    warned_ = hung_ = asked_snapshot_ = false;
  }
  if (a.kind == StallKind::kNone) return out;
  stall_since_ns_ = a.since_ns;
  if (!hung_ && a.stalled_s >= a.hang_after_s) {
    hung_ = true;
    DetectorEvent e;
    e.type = DetectorEvent::Type::kHang;
    e.line = "hang (" + std::string(stallKindName(a.kind)) + ", no progress for " +
             secondsText(a.stalled_s) + "): " + a.why;
    e.assessment = std::move(a);
    out.push_back(std::move(e));
    return out;
  }
  // A second ahead: the snapshot reaches the black boxes within a watchdog poll.
  if (!asked_snapshot_ && !warned_ && a.kind == StallKind::kWaitHost &&
      a.stalled_s >= a.warn_after_s - kSnapshotLeadS) {
    asked_snapshot_ = true;
    DetectorEvent e;
    e.type = DetectorEvent::Type::kSnapshot;
    out.push_back(std::move(e));
  }
  if (!warned_ && !hung_ && a.warn_after_s > 0 && a.stalled_s >= a.warn_after_s) {
    warned_ = true;
    DetectorEvent e;
    e.type = DetectorEvent::Type::kWarning;
    e.line = "stalled " + secondsText(a.stalled_s) + ": " + a.why + "; a hang after " +
             secondsText(a.hang_after_s) + " without progress";
    e.assessment = std::move(a);
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace ncclrec::live
