#include "launcher/agent.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/agent_internal.h"
#include "launcher/hang_report.h"
#include "launcher/local_address.h"
#include "launcher/store_server.h"
#include "launcher/token.h"
#include "launcher/top_server.h"
#include "launcher/worker_env.h"
#include "recorder/format/params_table.h"

namespace ncclrec::launcher {

int64_t nowNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

double monoS() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void say(const std::string& line) {
  const std::string s = line + "\n";
  (void)!write(STDERR_FILENO, s.data(), s.size());
}

std::string hostName() {
  char buf[256] = {};
  gethostname(buf, sizeof(buf) - 1);
  return buf;
}

std::string signalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

// A port nobody listens on right now, for the workers' own rendezvous (MASTER_PORT).
int freePort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof(a);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  close(fd);
  return port;
}

namespace {

std::string timeText(int64_t ns) {
  const time_t t = static_cast<time_t>(ns / 1000000000);
  tm tm{};
  localtime_r(&t, &tm);
  char buf[64];
  strftime(buf, sizeof(buf), "%Y-%m-%d_%H:%M:%S", &tm);
  return buf;
}

bool isLoopback(const std::string& addr) {
  return addr == "localhost" || addr.rfind("127.", 0) == 0;
}

// The value of an NCCLREC_* knob the launcher uses: the environment's, else the default declared
// in the one table of knobs (recorder/format/params_table.h).
std::string param(std::string_view name) {
  const char* v = std::getenv(std::string(name).c_str());
  if (v != nullptr && *v != '\0') return v;
  for (const auto& spec : format::allParams())
    if (spec.name == name) return std::string(spec.default_value);
  return "";
}

double dumpWaitSeconds() {
  const std::string v = param("NCCLREC_DUMP_WAIT");
  char* end = nullptr;
  const double d = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !(d >= 0)) {
    say("cxxrun: NCCLREC_DUMP_WAIT='" + v + "' is not a number of seconds; using 10");
    return 10;
  }
  return d;
}

std::string readSmallFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

int Agent::run() {
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGCHLD);
  // Blocked before the store's thread exists, so that every thread inherits the mask and the
  // signals reach only the signalfd.
  pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  signal(SIGPIPE, SIG_IGN);
  sigfd_ = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sigfd_ < 0) {
    say(std::string("cxxrun: signalfd: ") + strerror(errno));
    return kExitUsage;
  }

  const int gpus = visibleGpus();
  facts_.nccl = selectNccl(o_.nccl, gpus, findHostNcclDir(exe_));
  say(facts_.nccl.message);
  if (!facts_.nccl.ok) return kExitUsage;

  facts_.run_id = o_.run_id;
  if (multi() && facts_.run_id.empty()) {
    say("cxxrun: a job of " + std::to_string(o_.nnodes) +
        " nodes needs the same --run-id (or --rdzv-id) on every node");
    return kExitUsage;
  }
  if (facts_.run_id.empty()) {
    char buf[64];
    const time_t t = time(nullptr);
    tm tm{};
    localtime_r(&t, &tm);
    strftime(buf, sizeof(buf), "%Y%m%d-%H%M%S", &tm);
    facts_.run_id = std::string("cxxrun-") + buf + "-" + std::to_string(getpid());
  }
  auto token = jobToken(multi(), facts_.run_id, std::getenv("CXXRUN_TOKEN"), o_.rdzv_token_file);
  if (!token.ok()) {
    say(token.status().message());
    return kExitUsage;
  }
  facts_.token = *token;
  std::error_code ec;
  run_dir_ = std::filesystem::absolute(param("NCCLREC_DIR"), ec).lexically_normal().string() + "/" +
             facts_.run_id;

  // The store lives with node rank 0; an agent without a node rank on the master address's
  // machine hosts it if it can bind the port, else joins whoever does.
  bool hosting =
      !multi() || o_.node_rank == 0 || (o_.node_rank < 0 && isLocalAddress(o_.master_addr));
  if (hosting) {
    bool in_use = false;
    auto store = StoreServer::start(isLoopback(o_.master_addr) ? "127.0.0.1" : "0.0.0.0",
                                    o_.master_port, facts_.token, &in_use);
    if (store.ok()) {
      store_ = std::move(store).value();
    } else if (in_use && multi() && o_.node_rank < 0) {
      hosting = false;
    } else if (in_use) {
      say("cxxrun: port " + std::to_string(o_.master_port) +
          " is in use (another job?): use --master-port 0 or another port");
      return kExitUsage;
    } else {
      say("cxxrun: " + store.status().message());
      return kExitUsage;
    }
  }
  const std::string addr = o_.master_addr == "localhost" ? "127.0.0.1" : o_.master_addr;
  facts_.store_endpoint = addr + ":" + std::to_string(hosting ? store_->port() : o_.master_port);
  if (multi()) {
    const int rc = rendezvous(hosting);
    if (rc != kExitOk) return rc;
  }
  // ncclrec-top --connect: this node's black boxes, served until run() returns (top_server.h).
  const auto top_server = startTopServer(o_, facts_, run_dir_, host_);

  for (attempt_ = 0;; ++attempt_) {
    facts_.attempt = attempt_;
    facts_.dump_dir = dumpDir();
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
    if (const int rc = agreeOnMasterPort(); rc != kExitOk) return rc;
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
      case Outcome::kInterrupted: {
        const int sig = pending_signal_;
        // File times are coarser than the clock: a second of slack keeps a fresh dump fresh.
        const int64_t asked_ns = nowNs() - 1'000'000'000;
        writeOwnTrigger(sig);
        if (multi() && !hang_shared_) {
          hang_shared_ = true;
          publishOnce(jobKey("hang"), "interrupt on " + host_ + " (" + signalName(sig) + ")");
        }
        superviseHang("interrupt", readSmallFile(triggerPath()), asked_ns);
        stopWorkers();
        return 128 + sig;
      }
      case Outcome::kFailed:
      case Outcome::kRemoteFailed:
        if (outcome == Outcome::kFailed && multi()) publishFailure();
        if (attempt_ < o_.max_restarts && !store_lost_) {
          stopWorkers();
          say("cxxrun: worker group failed (run " + facts_.run_id + ", attempt " +
              std::to_string(attempt_) + "; first failure: " +
              (remote_failure_line_.empty() ? failureLine(failures_.front())
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
      return Outcome::kSucceeded;
    }
    const auto id = format::FileStamp::of(trigger);
    if (id && id != seen_trigger_) {
      seen_trigger_ = id;
      // The rank that saw the hang dumped before it wrote the trigger: any dump of this attempt
      // counts.
      const std::string text = readSmallFile(trigger);
      if (multi() && !hang_shared_) {
        hang_shared_ = true;
        publishOnce(jobKey("hang"), host_ + ": " + text);
      }
      superviseHang("hang", text, attempt_start_ns_);
      if (o_.on_hang == OnHang::kExit) return Outcome::kHang;
      // Every rank that times out writes the trigger again; those written while this report was
      // made belong to it.
      seen_trigger_ = format::FileStamp::of(trigger);
      say("cxxrun: --on-hang=wait: leaving the job running");
    }
  }
}

void Agent::superviseHang(const std::string& reason, const std::string& trigger_text,
                          int64_t since_ns) {
  const double wait_s = dumpWaitSeconds();
  const std::string dir = facts_.dump_dir;
  say("cxxrun: " + std::string(reason == "hang" ? "a rank reported a hang" : "stopping") +
      "; waiting up to " + std::to_string(static_cast<int>(wait_s)) +
      " s (NCCLREC_DUMP_WAIT) for every rank's dump");
  const double start = monoS();
  const int first_signal = pending_signal_;
  for (;;) {
    bool all = true;
    for (const Worker& w : workers_) {
      // A rank that never called NCCL has no recorder to dump; one that ended left its files.
      if (w.running && hasBlackBoxOf(dir, w.pid) && !hasDumpOf(dir, w.pid, since_ns)) all = false;
    }
    if (all || monoS() - start >= wait_s || stopping_) break;
    pump(50);
    if (reason == "hang" && pending_signal_ != 0 && pending_signal_ != first_signal) break;
  }
  HangReportInput in;
  in.run_id = facts_.run_id;
  in.attempt = attempt_;
  in.reason = reason;
  in.trigger_text = trigger_text;
  in.dump_dir = dir;
  in.waited_s = monoS() - start;
  in.workers = workerInfos();
  // The first hang of an attempt on several nodes gets one report, on node 0, over every node's
  // recordings; later ones (--on-hang=wait), or a node cut off from node 0, report locally.
  const bool job_wide = multi() && !gathered_ && !store_lost_;
  if (multi()) gathered_ = true;
  if (job_wide && o_.node_rank != 0 && sendRecordingsToNodeZero(in.workers, wait_s)) return;
  if (job_wide && o_.node_rank == 0) {
    receiveFromOtherNodes(&in, monoS() + wait_s + kSendMarginS);
    in.waited_s = monoS() - start;
  } else if (o_.node_rank > 0) {
    in.file_name = "report.node" + std::to_string(o_.node_rank) + ".json";
  }
  std::ostringstream text;
  auto path = writeHangReport(in, text);
  const std::string s = text.str();
  (void)!write(STDERR_FILENO, s.data(), s.size());
  if (!path.ok()) say(path.status().message());
  // The other nodes keep their workers until now: a rank stopped early would fail its pending
  // collectives on this node's ranks before they dumped.
  if (job_wide && o_.node_rank == 0 && rdzv_) {
    (void)rdzv_->set(jobKey("report"), path.ok() ? *path : path.status().message());
    std::vector<std::string> seen;
    for (const NodeInfo& n : in.nodes)
      if (n.node != 0 && !n.no_data)
        seen.push_back(jobKey("report_seen/" + std::to_string(n.node)));
    std::vector<int> missing;
    (void)waitForKeys(seen, kSendMarginS, &missing);  // then the store may go away
  }
}

std::vector<WorkerInfo> Agent::workerInfos() const {
  std::vector<WorkerInfo> out;
  for (const Worker& w : workers_) {
    WorkerInfo info;
    info.rank = w.rank;
    info.local_rank = w.local_rank;
    info.pid = w.pid;
    info.running = w.running;
    info.node = o_.node_rank;
    info.host = host_;
    if (!w.running) {
      info.ended = WIFSIGNALED(w.status) ? signalName(WTERMSIG(w.status))
                                         : "exit code " + std::to_string(WEXITSTATUS(w.status));
    }
    out.push_back(info);
  }
  return out;
}

std::string Agent::writeTrigger(const std::string& reason, const std::string& detail) {
  // The recorder's own trigger format (recorder/format/recording_files.h): the run id makes every
  // rank of this run dump with reason "trigger".
  format::TriggerFile trigger;
  trigger.run_id = facts_.run_id;
  trigger.host = host_;
  trigger.pid = getpid();
  trigger.rank = -1;
  trigger.reason = reason;
  trigger.detail = detail;
  const std::string path = triggerPath();
  std::string error;
  if (!trigger.write(path, &error)) say("cxxrun: " + error);
  seen_trigger_ = format::FileStamp::of(path);
  return trigger.text();
}

void Agent::writeOwnTrigger(int signo) {
  writeTrigger(signo != 0 ? "interrupt" : "hang", signo != 0
                                                      ? "cxxrun received " + signalName(signo)
                                                      : "hang on another node: " + remote_hang_);
  say("cxxrun: " +
      (signo != 0 ? signalName(signo) + " received" : std::string("another node hung")) +
      ": asking every rank to dump (" + triggerPath() + ")");
}

void Agent::finishFailure() {
  const std::string dir = facts_.dump_dir;
  // A black box is the shim's mark: libncclrec.so was preloaded and the rank called NCCL. Without
  // one there is nothing to analyze and the failure ends as torchrun's would.
  bool recorded = false, any_to_dump = false;
  for (const Worker& w : workers_) {
    const bool bbox = hasBlackBoxOf(dir, w.pid);
    recorded |= bbox;
    any_to_dump |= bbox && w.running;
  }
  // The root cause as the summary names it: another node's, else this node's first.
  const std::string first = !remote_failure_line_.empty() ? remote_failure_line_
                            : failures_.empty()           ? std::string("unknown")
                                                          : failureLine(failures_.front());
  std::string trigger_text;
  const double start = monoS();
  // The recorder does not dump on SIGTERM, and a rank stopped now would leave only its black box:
  // the ranks still running dump on the trigger first, as in a hang, up to NCCLREC_DUMP_WAIT.
  // When every rank already ended (the usual case on hostnccl, where peers fail at once) their
  // exit dumps and black boxes are on disk and nothing is waited for.
  if (any_to_dump) {
    const double wait_s = dumpWaitSeconds();
    const int64_t asked_ns = nowNs() - 1'000'000'000;  // file times are coarser than the clock
    trigger_text = writeTrigger("failure", "worker failed: " + first);
    say("cxxrun: a worker failed; asking the other ranks to dump before stopping them (up to " +
        std::to_string(static_cast<int>(wait_s)) + " s, NCCLREC_DUMP_WAIT)");
    const int first_signal = pending_signal_;
    for (;;) {
      bool all = true;
      for (const Worker& w : workers_)
        if (w.running && hasBlackBoxOf(dir, w.pid) && !hasDumpOf(dir, w.pid, asked_ns)) all = false;
      if (all || monoS() - start >= wait_s || pending_signal_ != first_signal) break;
      pump(50);
    }
  }
  const double waited_s = monoS() - start;
  stopWorkers();
  printFailureSummary();
  if (!recorded) return;
  HangReportInput in;
  in.run_id = facts_.run_id;
  in.attempt = attempt_;
  in.reason = "failure";
  in.failure = first;
  in.trigger_text = trigger_text;
  in.dump_dir = dir;
  in.waited_s = waited_s;
  in.workers = workerInfos();
  // Node-local on several nodes: the failure is already known to every agent through the store,
  // and each one reports on the recordings of its own ranks.
  if (o_.node_rank > 0) in.file_name = "report.node" + std::to_string(o_.node_rank) + ".json";
  std::ostringstream text;
  auto path = writeHangReport(in, text);
  const std::string s = text.str();
  (void)!write(STDERR_FILENO, s.data(), s.size());
  if (!path.ok()) say(path.status().message());
}

std::string Agent::failureText(const Failure& f) const {
  std::ostringstream s;
  s << "  time      : " << timeText(f.time_ns) << "\n";
  s << "  host      : " << host_ << "\n";
  s << "  rank      : " << f.rank << " (local_rank: " << f.local_rank << ")\n";
  if (WIFSIGNALED(f.status)) {
    s << "  exitcode  : -" << WTERMSIG(f.status) << " (pid: " << f.pid << ")\n";
    s << "  error     : Signal " << WTERMSIG(f.status) << " (" << signalName(WTERMSIG(f.status))
      << ") received by PID " << f.pid << "\n";
  } else {
    s << "  exitcode  : " << WEXITSTATUS(f.status) << " (pid: " << f.pid << ")\n";
  }
  return s.str();
}

std::string Agent::failureLine(const Failure& f) const {
  return "rank " + std::to_string(f.rank) + " on " + host_ + ", " +
         (WIFSIGNALED(f.status) ? "killed by " + signalName(WTERMSIG(f.status))
                                : "exit code " + std::to_string(WEXITSTATUS(f.status)));
}

void Agent::printFailureSummary() const {
  std::ostringstream s;
  s << "cxxrun: worker group failed (run " << facts_.run_id << ", attempt " << attempt_ << ")\n";
  s << "Failures:\n";
  // With the root cause on another node, every failure seen here is one of the others.
  const size_t first_other = remote_failure_.empty() ? 1 : 0;
  if (failures_.size() <= first_other) s << "  <NO_OTHER_FAILURES>\n";
  for (size_t i = first_other; i < failures_.size(); ++i)
    s << "[" << i + 1 - first_other << "]:\n" << failureText(failures_[i]);
  s << "Root Cause (first observed failure):\n";
  if (!remote_failure_.empty()) {
    s << "[0]:\n" << remote_failure_;
  } else if (failures_.empty()) {
    s << "  the worker group could not be started\n";
  } else {
    s << "[0]:\n" << failureText(failures_.front());
  }
  const std::string text = s.str();
  (void)!write(STDERR_FILENO, text.data(), text.size());
}

int runAgent(const Options& options, const std::string& exe_path) {
  Agent agent(options, exe_path);
  return agent.run();
}

}  // namespace ncclrec::launcher
