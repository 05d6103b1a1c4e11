// Supervision of hangs, interrupts and failures: the trigger file that makes every rank dump, the
// one wait for those dumps (waitForDumps) and the one report (writeReport()) over them.
#include <sys/wait.h>
#include <unistd.h>

#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "base/proc_state.h"
#include "format/report_json.h"
#include "launcher/agent_internal.h"

namespace ncclrec::launcher {

bool Agent::allDumped(int64_t since_ns) const {
  const std::string& dir = facts_.dump_dir;
  for (const Worker& w : workers_) {
    // A rank that never called NCCL has no recorder to dump; one that ended left its files.
    if (!w.running || !report::hasBlackBoxOf(dir, w.pid) || report::hasDumpOf(dir, w.pid, since_ns))
      continue;
    // A process stopped by a signal or a debugger cannot dump: waiting for it would only delay
    // the verdict that names it.
    const std::optional<base::ProcessState> ps = base::readProcessState(w.pid);
    if (ps && base::stoppedForGood(ps->state)) continue;
    return false;
  }
  return true;
}

double Agent::waitForDumps(int64_t since_ns, double wait_s, bool stop_on_signal) {
  const double start = monoS();
  const int first_signal = pending_signal_;
  for (;;) {
    if (allDumped(since_ns) || monoS() - start >= wait_s || stopping_) break;
    if (stop_on_signal && pending_signal_ != first_signal) break;
    pump(50);
  }
  return monoS() - start;
}

base::StatusOr<std::string> Agent::writeReport(report::ReportReason reason,
                                               report::HangReportInput in) {
  in.run_id = facts_.run_id;
  in.attempt = attempt_;
  in.reason = reason;
  in.dump_dir = facts_.dump_dir;
  // The other nodes' own reports sit beside node 0's on a shared filesystem.
  if (o_.node_rank > 0) in.file_name = format::report_json::nodeFileName(o_.node_rank);
  std::ostringstream text;
  auto path = report::writeHangReport(in, text);
  const std::string s = text.str();
  (void)!write(STDERR_FILENO, s.data(), s.size());
  if (!path.ok()) say(path.status().message());
  return path;
}

void Agent::superviseHang(report::ReportReason reason, const std::string& trigger_text,
                          int64_t since_ns, const live::DetectorEvent* detected) {
  const double wait_s = dumpWaitSeconds();
  const char* what = reason != report::ReportReason::kHang ? "stopping"
                     : detected != nullptr                 ? "hang detected"
                                                           : "a rank reported a hang";
  say("cxxrun: " + std::string(what) + "; waiting up to " +
      std::to_string(static_cast<int>(wait_s)) + " s (NCCLREC_DUMP_WAIT) for every rank's dump");
  const double start = monoS();
  // A signal ends the wait for a hang's dumps; an interrupt's ends only on a second one.
  waitForDumps(since_ns, wait_s, /*stop_on_signal=*/reason == report::ReportReason::kHang);
  report::HangReportInput in;
  in.trigger_text = trigger_text;
  in.waited_s = monoS() - start;
  if (detected != nullptr) {
    in.stall_began_ns = detected->assessment.since_ns;
    in.detected_ns = detected_ns_;
    in.detection = detected->line;
  } else if (reason == report::ReportReason::kHang && multi() && !remote_hang_.empty()) {
    (void)readRemoteTimeline(&in);  // another node's detector declared it
  }
  in.workers = workerInfos();
  // The first hang of an attempt on several nodes gets one report, on node 0, over every node's
  // recordings; later ones (--on-hang=wait), or a node cut off from node 0, report locally.
  const bool job_wide = multi() && !gathered_ && !store_lost_;
  if (multi()) gathered_ = true;
  if (job_wide && o_.node_rank != 0 && sendRecordingsToNodeZero(in.workers, wait_s)) return;
  if (job_wide && o_.node_rank == 0) {
    receiveFromOtherNodes(&in, monoS() + wait_s + kSendMarginS);
    in.waited_s = monoS() - start;
  }
  const auto path = writeReport(reason, in);
  // The other nodes keep their workers until now: a rank stopped early would fail its pending
  // collectives on this node's ranks before they dumped.
  if (job_wide && o_.node_rank == 0 && rdzv_) shareReport(path, in.nodes);
}

void Agent::finishFailure() {
  // A black box is the shim's mark: libncclrec.so was preloaded and the rank called NCCL. Without
  // one there is nothing to analyze and the failure ends as torchrun's would.
  bool recorded = false, any_to_dump = false;
  for (const Worker& w : workers_) {
    const bool bbox = report::hasBlackBoxOf(facts_.dump_dir, w.pid);
    recorded |= bbox;
    any_to_dump |= bbox && w.running;
  }
  report::HangReportInput in;
  // The root cause as the summary names it: another node's, else this node's first.
  in.failure = !remote_failure_line_.empty() ? remote_failure_line_
               : failures_.empty()           ? std::string("unknown")
                                             : failureLine(failures_.front(), host_);
  // The recorder does not dump on SIGTERM, and a rank stopped now would leave only its black box:
  // the ranks still running dump on the trigger first, as in a hang, up to NCCLREC_DUMP_WAIT.
  // When every rank already ended (the usual case on hostnccl, where peers fail at once) their
  // exit dumps and black boxes are on disk and nothing is waited for.
  if (any_to_dump) {
    const double wait_s = dumpWaitSeconds();
    const int64_t asked_ns =
        base::realtimeNs() - 1'000'000'000;  // file times are coarser than the clock
    in.trigger_text = writeTrigger(report::ReportReason::kFailure, "worker failed: " + in.failure);
    say("cxxrun: a worker failed; asking the other ranks to dump before stopping them (up to " +
        std::to_string(static_cast<int>(wait_s)) + " s, NCCLREC_DUMP_WAIT)");
    in.waited_s = waitForDumps(asked_ns, wait_s, /*stop_on_signal=*/true);
  }
  stopWorkers();
  printFailureSummary();
  if (!recorded) return;
  // Node-local on several nodes: the failure is already known to every agent through the store,
  // and each one reports on the recordings of its own ranks.
  in.workers = workerInfos();
  (void)writeReport(report::ReportReason::kFailure, in);
}

std::vector<report::WorkerInfo> Agent::workerInfos() const {
  std::vector<report::WorkerInfo> out;
  for (const Worker& w : workers_) {
    report::WorkerInfo info;
    info.rank = w.rank;
    info.local_rank = w.local_rank;
    info.pid = w.pid;
    info.running = w.running;
    info.stopped = w.stopped;
    info.node = o_.node_rank;
    info.host = host_;
    if (w.running) {
      if (const std::optional<base::ProcessState> ps = base::readProcessState(w.pid)) {
        info.process_state = ps->state;
        info.wchan = ps->wchan;
      }
    } else {
      info.ended = WIFSIGNALED(w.status) ? base::signalName(WTERMSIG(w.status))
                                         : "exit code " + std::to_string(WEXITSTATUS(w.status));
    }
    out.push_back(info);
  }
  return out;
}

std::string Agent::writeTrigger(report::ReportReason reason, const std::string& detail) {
  // The recorder's own trigger format (format/recording_files.h): the run id makes every
  // rank of this run dump with reason "trigger".
  format::TriggerFile trigger;
  trigger.run_id = facts_.run_id;
  trigger.host = host_;
  trigger.pid = getpid();
  trigger.rank = -1;
  trigger.reason = std::string(report::reportReasonName(reason));
  trigger.detail = detail;
  const std::string path = triggerPath();
  std::string error;
  if (!trigger.write(path, &error)) say("cxxrun: " + error);
  seen_trigger_ = format::FileStamp::of(path);
  return trigger.text();
}

void Agent::writeOwnTrigger(int signo) {
  writeTrigger(signo != 0 ? report::ReportReason::kInterrupt : report::ReportReason::kHang,
               signo != 0 ? "cxxrun received " + base::signalName(signo)
                          : "hang on another node: " + remote_hang_);
  say("cxxrun: " +
      (signo != 0 ? base::signalName(signo) + " received" : std::string("another node hung")) +
      ": asking every rank to dump (" + triggerPath() + ")");
}

void Agent::printFailureSummary() const {
  const std::string text =
      failureSummaryText({facts_.run_id, attempt_, host_, failures_, remote_failure_});
  (void)!write(STDERR_FILENO, text.data(), text.size());
}

}  // namespace ncclrec::launcher
