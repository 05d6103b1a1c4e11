// The attempt loop of the cxxrun agent: each attempt starts the worker group, watches it (output,
// exits, the trigger file, signals, other nodes) and ends the job or restarts the group.
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "base/file.h"
#include "launcher/agent_internal.h"

namespace ncclrec::launcher {

int Agent::runAttempts() {
  for (attempt_ = 0;; ++attempt_) {
    if (const int rc = beginAttempt(); rc != kExitOk) return rc;
    if (!startWorkers()) {
      stopWorkers();
      printFailureSummary();
      return kExitWorkerFailed;
    }
    Outcome outcome = monitor();
    if (outcome == Outcome::kSucceeded) {
      closeStreams();
      if (!multi()) return kExitOk;
      outcome = waitForJobEnd();
    }
    switch (outcome) {
      case Outcome::kSucceeded:
        return kExitOk;
      case Outcome::kHang:
        stopWorkers();
        return kExitHang;
      case Outcome::kInterrupted:
        return endOnSignal();
      case Outcome::kFailed:
      case Outcome::kRemoteFailed:
        if (outcome == Outcome::kFailed && multi()) publishFailure();
        if (attempt_ < o_.max_restarts && !store_lost_) {
          stopWorkers();
          say("cxxrun: worker group failed (run " + facts_.run_id + ", attempt " +
              std::to_string(attempt_) + "; first failure: " +
              (remote_failure_line_.empty() ? failureLine(failures_.front(), host_)
                                            : remote_failure_line_) +
              "); restarting, " + std::to_string(o_.max_restarts - attempt_) + " restart(s) left");
          if (!multi() || restartBarrier()) continue;
          if (pending_signal_ != 0) return 128 + pending_signal_;
        }
        finishFailure();
        return kExitWorkerFailed;
    }
  }
}

// The attempt's dump directory and a clean slate; the workers' MASTER_PORT agreed.
int Agent::beginAttempt() {
  facts_.attempt = attempt_;
  facts_.dump_dir = dumpDir();
  std::error_code ec;
  std::filesystem::create_directories(facts_.dump_dir, ec);
  if (ec) {
    say("cxxrun: cannot create " + facts_.dump_dir + ": " + ec.message());
    return kExitUsage;
  }
  chmod(facts_.dump_dir.c_str(), 0700);
  failures_.clear();
  remote_failure_.clear();
  remote_failure_line_.clear();
  remote_hang_.clear();
  hang_shared_ = false;
  gathered_ = false;
  seen_trigger_ = format::FileStamp::of(triggerPath());
  startLive();
  return agreeOnMasterPort();
}

Outcome Agent::monitor() {
  const int interval_ms = std::max(1, static_cast<int>(o_.monitor_interval_s * 1000));
  const std::string trigger = triggerPath();
  for (;;) {
    pump(interval_ms);
    if (pending_signal_ != 0) return Outcome::kInterrupted;
    if (!failures_.empty()) return Outcome::kFailed;
    Outcome remote;
    if (multi() && checkRemote(&remote)) {
      if (remote != Outcome::kHang) return remote;
      // Another node's rank hung: our ranks dump too, through our own trigger.
      writeOwnTrigger(0);
      superviseHang(remoteHangReason(), remote_hang_, attempt_start_ns_);
      if (o_.on_hang == OnHang::kExit) return Outcome::kHang;
      say("cxxrun: --on-hang=wait: leaving the job running");
      continue;
    }
    bool any_running = false;
    for (const Worker& w : workers_) any_running |= w.running;
    if (!any_running) {
      // Every worker exited 0; take what is left in the pipes without waiting on grandchildren
      // that may still hold them.
      pump(0);
      (void)pollLive(/*now=*/true);  // a warned stall that ended with the job says so
      return Outcome::kSucceeded;
    }
    const auto id = format::FileStamp::of(trigger);
    if (id && id != seen_trigger_) {
      seen_trigger_ = id;
      // The rank that saw the hang dumped before it wrote the trigger: any dump of this attempt
      // counts.
      const std::string text = base::readFile(trigger).value_or("");
      if (multi() && !hang_shared_) {
        hang_shared_ = true;
        publishOnce(jobKey("hang"), host_ + ": " + text);
      }
      superviseHang(report::ReportReason::kHang, text, attempt_start_ns_);
      if (o_.on_hang == OnHang::kExit) return Outcome::kHang;
      // Every rank that times out writes the trigger again; those written while this report was
      // made belong to it.
      seen_trigger_ = format::FileStamp::of(trigger);
      say("cxxrun: --on-hang=wait: leaving the job running");
      continue;
    }
    if (std::optional<live::DetectorEvent> hang = pollLive()) {
      // Every rank dumps on cxxrun's trigger, as on a rank's own.
      detected_ns_ = base::realtimeNs();
      const std::string text = writeTrigger(report::ReportReason::kHang, hang->line);
      if (multi() && !hang_shared_) {
        hang_shared_ = true;
        publishTimeline(*hang);  // before the hang: a node that sees the hang finds it
        publishOnce(jobKey("hang"), host_ + ": " + text);
      }
      superviseHang(report::ReportReason::kHang, text, attempt_start_ns_, &*hang);
      if (o_.on_hang == OnHang::kExit) return Outcome::kHang;
      seen_trigger_ = format::FileStamp::of(trigger);
      say("cxxrun: --on-hang=wait: leaving the job running");
    }
  }
}

// SIGINT or SIGTERM: every rank dumps, one report, then the group stops; cxxrun ends as the
// signal would have ended it.
int Agent::endOnSignal() {
  const int sig = pending_signal_;
  // File times are coarser than the clock: a second of slack keeps a fresh dump fresh.
  const int64_t asked_ns = base::realtimeNs() - 1'000'000'000;
  writeOwnTrigger(sig);
  if (multi() && !hang_shared_) {
    hang_shared_ = true;
    publishOnce(jobKey("hang"), "interrupt on " + host_ + " (" + base::signalName(sig) + ")");
  }
  superviseHang(report::ReportReason::kInterrupt, base::readFile(triggerPath()).value_or(""),
                asked_ns);
  stopWorkers();
  return 128 + sig;
}

}  // namespace ncclrec::launcher
