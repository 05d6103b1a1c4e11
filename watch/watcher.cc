#include "watch/watcher.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>

#include "base/clock.h"
#include "base/proc_state.h"
#include "base/text.h"
#include "format/recording_files.h"
#include "live/snapshot_request.h"
#include "report/hang_report.h"

namespace ncclrec::watch {
namespace {

using live::Liveness;

constexpr int64_t kStallNs = 1'000'000'000;  // an op incomplete this long: something stalls

// Whether some rank has an op incomplete for a second or more.
bool anyStall(const live::Snapshot& s) {
  for (size_t i = 0; i < s.ranks.size() && i < s.status.size(); ++i) {
    const int oldest = s.status[i].oldest_incomplete;
    if (oldest < 0 || s.ranks[i].liveness != Liveness::kAlive) continue;
    if (s.now_ns - s.ranks[i].history->ops[static_cast<size_t>(oldest)].enqueue_ns >= kStallNs)
      return true;
  }
  return false;
}

std::string lockPath(const std::string& dir) {
  return dir + "/" + std::string(format::kWatchLockFileName);
}

// Every run in the directory, or only `run_id`'s; of a rank recorded twice (a reused directory,
// a restarted rank), the newest process.
live::CollectorOptions collectorOptions(const WatchOptions& o, const live::DetectorParams& params) {
  live::CollectorOptions c;
  c.dir = o.dir;
  c.hang_after_s = params.timeout_s;
  c.run_id = o.run_id;
  c.newest_per_rank = true;
  return c;
}

// What /proc says of a rank's process when it runs on this host; nullopt otherwise.
std::optional<base::ProcessState> localProcessState(const live::RankEntry& r,
                                                    const std::string& host) {
  if (r.host != host || (r.liveness != Liveness::kAlive && r.liveness != Liveness::kNotRunning))
    return std::nullopt;
  return base::readProcessState(r.pid);
}

// The ranks of a snapshot as the report's workers, with what /proc says of those of this host;
// the run id of the first when none was given.
void addWorkers(const live::Snapshot& s, const std::string& host, report::HangReportInput* in) {
  for (const live::RankEntry& r : s.ranks) {
    report::WorkerInfo w;
    w.rank = r.global_rank;
    w.local_rank = r.local_rank;
    w.pid = r.pid;
    w.host = r.host;
    // A process that is there but not running (stopped) still runs as a worker: /proc says how.
    w.running = r.liveness == Liveness::kAlive || r.liveness == Liveness::kNotRunning;
    if (!w.running) w.ended = std::string(live::livenessName(r.liveness));
    if (const std::optional<base::ProcessState> ps = localProcessState(r, host)) {
      w.process_state = ps->state;
      w.wchan = ps->wchan;
    }
    in->workers.push_back(std::move(w));
    if (in->run_id.empty()) in->run_id = r.run_id;
  }
}

}  // namespace

Watcher::Watcher(WatchOptions options, live::DetectorParams params, std::ostream& err)
    : options_(std::move(options)),
      detector_(params),
      err_(err),
      collector_(collectorOptions(options_, params)),
      host_(base::hostName()) {}

// Said with the first line about a stall, not before: ranks that are still starting (a slow
// import) are not yet in the directory either.
void Watcher::sayIfNotShared(const live::Snapshot& s) {
  if (said_not_shared_ || s.ranks.empty()) return;
  int world = 0;
  for (const live::RankEntry& r : s.ranks) {
    if (r.host != host_) return;  // another node's ranks are here: the directory is shared
    world = std::max(world, r.world_size);
  }
  if (static_cast<int>(s.ranks.size()) >= world) return;
  said_not_shared_ = true;
  err_ << "ncclrec: " << options_.dir << " holds " << s.ranks.size() << " of the job's " << world
       << " ranks, all on this host: the directory is not shared, so this watches this node's "
          "ranks only (NCCLREC_DIR shared by the job gives a job-wide verdict)\n"
       << std::flush;
}

Watcher::State Watcher::step(int64_t now_ns) {
  if (started_ns_ == 0) started_ns_ = last_stall_ns_ = now_ns;
  last_ = collector_.collect(now_ns);
  const live::Snapshot& s = *last_;
  for (const live::RankEntry& r : s.ranks) seen_[{r.host, r.pid}] = r;
  if (anyStall(s)) last_stall_ns_ = now_ns;
  State state = State::kWatching;
  std::vector<live::DetectorEvent> events = detector_.step(s);
  if (!events.empty()) sayIfNotShared(s);
  for (live::DetectorEvent& e : events) {
    if (e.type == live::DetectorEvent::Type::kHang) {
      hang_ = std::move(e);
      state = State::kHang;
    } else if (e.type == live::DetectorEvent::Type::kSnapshot) {
      // For the warning's "it is now in ...". This collector reads its own directory only:
      // there are no agents to pass the request on to.
      bool through_agents = false;
      (void)live::requestThreadSnapshots(s, &through_agents);
    } else {
      err_ << "ncclrec: " << e.line << "\n" << std::flush;
    }
  }
  if (state == State::kHang) return state;
  const bool all_ended =
      !seen_.empty() && std::none_of(s.ranks.begin(), s.ranks.end(), [](const live::RankEntry& r) {
        return r.liveness == Liveness::kAlive || r.liveness == Liveness::kNotRunning;
      });
  if (all_ended) return State::kEnded;
  if (static_cast<double>(now_ns - last_stall_ns_) >= options_.linger_s * 1e9)
    return State::kLingered;
  return State::kWatching;
}

bool Watcher::allDumped(int64_t since_ns) const {
  for (const live::RankEntry& r : last_->ranks) {
    if (r.liveness != Liveness::kAlive && r.liveness != Liveness::kNotRunning)
      continue;  // a rank that ended left its files
    if (report::hasDumpOf(options_.dir, r.pid, since_ns)) continue;
    // A process of this host stopped by a signal or a debugger runs no code: it cannot dump.
    const std::optional<base::ProcessState> ps = localProcessState(r, host_);
    if (ps && base::stoppedForGood(ps->state)) continue;
    return false;
  }
  return true;
}

int Watcher::report(int64_t detected_ns, const std::function<void(double)>& sleep) {
  err_ << "ncclrec: " << hang_.line << "\n" << std::flush;  // at once: the verdict follows
  format::TriggerFile trigger;
  trigger.run_id = options_.run_id;
  trigger.host = host_;
  trigger.pid = static_cast<int>(getpid());
  trigger.rank = -1;
  trigger.reason = "hang";
  trigger.detail = hang_.line;
  std::string error;
  const std::string trigger_path = options_.dir + "/" + std::string(format::kTriggerFileName);
  if (!trigger.write(trigger_path, &error)) err_ << "ncclrec: " << error << "\n";
  const int64_t since_ns = detected_ns - 1'000'000'000;  // file times are coarser than the clock
  const int64_t start = base::monotonicNs();
  auto waited = [&] { return static_cast<double>(base::monotonicNs() - start) / 1e9; };
  while (!allDumped(since_ns) && waited() < options_.dump_wait_s) sleep(0.05);
  report::HangReportInput in;
  in.run_id = options_.run_id;
  in.reason = report::ReportReason::kHang;
  in.trigger_text = trigger.text();
  in.dump_dir = options_.dir;
  in.waited_s = waited();
  // Liveness after the wait: a rank may have ended meanwhile.
  last_ = collector_.collect(base::realtimeNs());
  addWorkers(*last_, host_, &in);
  in.stall_began_ns = hang_.assessment.since_ns;
  in.detected_ns = detected_ns;
  in.detection = hang_.line;
  in.tool = "ncclrec";
  auto path = report::writeHangReport(in, err_);
  err_ << std::flush;
  if (!path.ok()) {
    err_ << path.status().message() << "\n" << std::flush;  // "ncclrec: cannot write ..."
    return kWatchFailed;
  }
  return kWatchDone;
}

int runWatcher(const WatchOptions& options, std::ostream& err) {
  const int fd = open(lockPath(options.dir).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    err << "ncclrec-watch: cannot open " << lockPath(options.dir) << "\n";
    return kWatchFailed;
  }
  // A rank may test the lock at this very moment (it takes it for an instant): look a few times
  // before leaving the directory to the watcher that holds it.
  bool locked = false;
  for (int i = 0; i < 5 && !locked; ++i) {
    locked = flock(fd, LOCK_EX | LOCK_NB) == 0;
    if (!locked) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!locked) return kWatchDone;  // another watcher watches this directory
  std::string problem;
  const live::DetectorParams params = live::DetectorParams::fromEnvironment(&problem);
  if (!problem.empty()) err << "ncclrec-watch: " << problem << "\n" << std::flush;
  Watcher w(options, params, err);
  auto sleep = [](double s) {
    std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(s * 1e6)));
  };
  int code = kWatchDone;
  for (;;) {
    const int64_t now = base::realtimeNs();
    const Watcher::State state = w.step(now);
    if (state == Watcher::State::kHang) code = w.report(now, sleep);
    if (state == Watcher::State::kEnded || state == Watcher::State::kLingered) break;
    sleep(options.interval_s);
  }
  close(fd);
  return code;
}

int writeEndReport(const WatchOptions& options, std::ostream& out, std::ostream& err) {
  std::string problem;
  const live::DetectorParams params = live::DetectorParams::fromEnvironment(&problem);
  if (!problem.empty()) err << "ncclrec-watch: " << problem << "\n" << std::flush;
  live::Collector collector(collectorOptions(options, params));
  report::HangReportInput in;
  in.run_id = options.run_id;
  in.reason = report::ReportReason::kEnded;
  in.ended = options.ended;
  in.dump_dir = options.dir;
  in.tool = "ncclrec";
  addWorkers(*collector.collect(base::realtimeNs()), base::hostName(), &in);
  auto path = report::writeHangReport(in, out);
  out << std::flush;
  if (!path.ok()) {
    err << path.status().message() << "\n" << std::flush;
    return kWatchFailed;
  }
  return kWatchDone;
}

}  // namespace ncclrec::watch
