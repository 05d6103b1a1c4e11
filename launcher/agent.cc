#include "launcher/agent.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "launcher/hang_report.h"
#include "launcher/store_client.h"
#include "launcher/store_server.h"
#include "launcher/worker_env.h"
#include "recorder/format/params_table.h"

extern char** environ;

namespace ncclrec::launcher {
namespace {

constexpr const char* kTriggerFile = "ncclrec.trigger";  // recorder/watchdog.h kTriggerFileName

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

std::string timeText(int64_t ns) {
  const time_t t = static_cast<time_t>(ns / 1000000000);
  tm tm{};
  localtime_r(&t, &tm);
  char buf[64];
  strftime(buf, sizeof(buf), "%Y-%m-%d_%H:%M:%S", &tm);
  return buf;
}

std::string signalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

std::string randomToken() {
  unsigned char bytes[16] = {};
  std::ifstream("/dev/urandom", std::ios::binary)
      .read(reinterpret_cast<char*>(bytes), sizeof(bytes));
  std::string hex;
  char buf[3];
  for (unsigned char b : bytes) {
    std::snprintf(buf, sizeof(buf), "%02x", b);
    hex += buf;
  }
  return hex;
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

struct FileId {
  int64_t mtime_ns = 0;
  uint64_t ino = 0;
  bool operator==(const FileId&) const = default;
};

std::optional<FileId> fileId(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileId{static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
                st.st_ino};
}

std::string readSmallFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Stream {
  int fd = -1;       // read end of the worker's pipe; -1 after EOF
  int console = -1;  // STDOUT_FILENO / STDERR_FILENO, -1 when redirected
  int log = -1;      // log file, -1 when none
  std::string partial;
};

struct Worker {
  int local_rank = 0;
  int rank = 0;
  pid_t pid = -1;
  bool running = false;
  int status = 0;
  Stream out, err;
};

struct Failure {
  int rank = -1;
  int local_rank = -1;
  pid_t pid = 0;
  int status = 0;
  int64_t time_ns = 0;
};

enum class Outcome { kSucceeded, kFailed, kRemoteFailed, kHang, kInterrupted };

class Agent {
 public:
  Agent(const Options& o, std::string exe) : o_(o), exe_(std::move(exe)) {}
  int run();

 private:
  bool startWorkers();
  Outcome monitor();
  void pump(int timeout_ms);
  void emit(Worker& w, Stream& s, bool flush_partial);
  void reap();
  void stopWorkers();
  void closeStreams();
  void superviseHang(const std::string& reason, const std::string& trigger_text, int64_t since_ns);
  void writeOwnTrigger(int signo);
  void printFailureSummary() const;
  std::string failureText(const Failure& f) const;
  // Multi-node: the agents' rendezvous and what they tell each other through the store.
  int rendezvous(bool hosting);
  bool checkRemote(Outcome* outcome);
  void publishOnce(const std::string& key, const std::string& value);
  int waitForOtherNodes();
  bool multi() const { return o_.nnodes > 1; }
  std::string dumpDir() const { return run_dir_ + "/attempt_" + std::to_string(attempt_); }

  Options o_;
  std::string exe_;
  int sigfd_ = -1;
  int pending_signal_ = 0;
  bool stopping_ = false;
  std::unique_ptr<StoreServer> store_;
  JobFacts facts_;
  std::string run_dir_;
  std::string host_ = hostName();
  int attempt_ = 0;
  int64_t attempt_start_ns_ = 0;
  std::vector<Worker> workers_;
  std::vector<Failure> failures_;
  std::optional<FileId> seen_trigger_;
  std::optional<StoreClient> rdzv_;  // multi-node only: this agent's connection to the store
  std::vector<std::string> published_;
  std::string remote_failure_;  // what another node reported as the job's first failure
  std::string remote_hang_;     // set when another node reported a hang
};

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
  // One node: a random token. Several: every agent must derive the same one, from CXXRUN_TOKEN
  // when the user shares a secret, else from the run id (which then only tells jobs apart).
  const char* shared_token = std::getenv("CXXRUN_TOKEN");
  facts_.token = !multi()                                           ? randomToken()
                 : shared_token != nullptr && *shared_token != '\0' ? std::string(shared_token)
                                                                    : "run:" + facts_.run_id;

  // The store lives with node rank 0; an agent without a node rank hosts it if it can bind the
  // port, else joins whoever does.
  bool hosting = !multi() || o_.node_rank <= 0;
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
  } else {
    facts_.worker_master_port = freePort();
  }

  std::error_code ec;
  run_dir_ = std::filesystem::absolute(param("NCCLREC_DIR"), ec).lexically_normal().string() + "/" +
             facts_.run_id;

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
    seen_trigger_ = fileId(facts_.dump_dir + "/" + kTriggerFile);
    if (!startWorkers()) {
      stopWorkers();
      printFailureSummary();
      return kExitWorkerFailed;
    }
    const Outcome outcome = monitor();
    switch (outcome) {
      case Outcome::kSucceeded:
        closeStreams();
        return multi() ? waitForOtherNodes() : kExitOk;
      case Outcome::kRemoteFailed:
        stopWorkers();
        printFailureSummary();
        return kExitWorkerFailed;
      case Outcome::kHang:
        stopWorkers();
        return kExitHang;
      case Outcome::kInterrupted: {
        const int sig = pending_signal_;
        // File times are coarser than the clock: a second of slack keeps a fresh dump fresh.
        const int64_t asked_ns = nowNs() - 1'000'000'000;
        writeOwnTrigger(sig);
        if (multi())
          publishOnce("job/hang", "interrupt on " + host_ + " (" + signalName(sig) + ")");
        superviseHang("interrupt", readSmallFile(facts_.dump_dir + "/" + kTriggerFile), asked_ns);
        stopWorkers();
        return 128 + sig;
      }
      case Outcome::kFailed:
        if (multi()) publishOnce("job/failed", failureText(failures_.front()));
        stopWorkers();
        if (attempt_ < o_.max_restarts) {
          const Failure& f = failures_.front();
          say("cxxrun: worker group failed (rank " + std::to_string(f.rank) + "); restarting, " +
              std::to_string(o_.max_restarts - attempt_) + " restart(s) left");
          continue;
        }
        printFailureSummary();
        return kExitWorkerFailed;
    }
  }
}

bool Agent::startWorkers() {
  workers_.assign(static_cast<size_t>(o_.nproc_per_node), Worker{});
  attempt_start_ns_ = nowNs();
  stopping_ = false;
  const char* ld = std::getenv("LD_LIBRARY_PATH");
  std::vector<char*> argv;
  for (const auto& a : o_.program) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (int lr = 0; lr < o_.nproc_per_node; ++lr) {
    Worker& w = workers_[static_cast<size_t>(lr)];
    w.local_rank = lr;
    w.rank = o_.node_rank * o_.nproc_per_node + lr;
    std::map<std::string, std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      const char* eq = std::strchr(*e, '=');
      if (eq != nullptr) env[std::string(*e, static_cast<size_t>(eq - *e))] = eq + 1;
    }
    for (auto& [k, v] : workerEnv(o_, facts_, lr, ld != nullptr ? ld : "")) env[k] = v;
    std::vector<std::string> env_strings;
    for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
    std::vector<char*> envp;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);

    const size_t i = static_cast<size_t>(lr);
    w.out.console = (o_.redirects[i] & 1) != 0 ? -1 : STDOUT_FILENO;
    w.err.console = (o_.redirects[i] & 2) != 0 ? -1 : STDERR_FILENO;
    if (!o_.log_dir.empty()) {
      const std::string dir = o_.log_dir + "/" + facts_.run_id + "/attempt_" +
                              std::to_string(attempt_) + "/" + std::to_string(lr);
      std::error_code ec;
      std::filesystem::create_directories(dir, ec);
      w.out.log =
          open((dir + "/stdout.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      w.err.log =
          open((dir + "/stderr.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (w.out.log < 0 || w.err.log < 0)
        say("cxxrun: cannot write logs in " + dir + ": " + strerror(errno));
    }
    int out_pipe[2], err_pipe[2];
    if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
      say(std::string("cxxrun: pipe: ") + strerror(errno));
      return false;
    }
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid == 0) {
      // Only async-signal-safe calls from here: the store's thread may hold locks.
      setpgid(0, 0);  // Ctrl-C reaches cxxrun only, which makes every rank dump first
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(127);
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      signal(SIGPIPE, SIG_DFL);
      dup2(out_pipe[1], STDOUT_FILENO);
      dup2(err_pipe[1], STDERR_FILENO);
      execvpe(argv[0], argv.data(), envp.data());
      const char* why = strerror(errno);
      (void)!write(STDERR_FILENO, "cxxrun: cannot run ", 19);
      (void)!write(STDERR_FILENO, argv[0], strlen(argv[0]));
      (void)!write(STDERR_FILENO, ": ", 2);
      (void)!write(STDERR_FILENO, why, strlen(why));
      (void)!write(STDERR_FILENO, "\n", 1);
      _exit(127);
    }
    close(out_pipe[1]);
    close(err_pipe[1]);
    if (pid < 0) {
      close(out_pipe[0]);
      close(err_pipe[0]);
      say(std::string("cxxrun: fork: ") + strerror(errno));
      return false;
    }
    setpgid(pid, pid);
    w.pid = pid;
    w.running = true;
    w.out.fd = out_pipe[0];
    w.err.fd = err_pipe[0];
  }
  return true;
}

void Agent::emit(Worker& w, Stream& s, bool flush_partial) {
  const std::string prefix = "[rank" + std::to_string(w.rank) + "]:";
  size_t start = 0;
  std::string text;
  for (;;) {
    const size_t nl = s.partial.find('\n', start);
    if (nl == std::string::npos) break;
    text += prefix;
    text.append(s.partial, start, nl + 1 - start);
    start = nl + 1;
  }
  s.partial.erase(0, start);
  if (flush_partial && !s.partial.empty()) {
    text += prefix + s.partial + "\n";
    s.partial.clear();
  }
  if (text.empty()) return;
  // Write failures (a closed terminal, a full disk) must not stop the supervision.
  if (s.console >= 0) (void)!write(s.console, text.data(), text.size());
  if (s.log >= 0) (void)!write(s.log, text.data(), text.size());
}

void Agent::pump(int timeout_ms) {
  std::vector<pollfd> fds;
  std::vector<std::pair<Worker*, Stream*>> owners;
  fds.push_back({sigfd_, POLLIN, 0});
  owners.push_back({nullptr, nullptr});
  for (Worker& w : workers_) {
    for (Stream* s : {&w.out, &w.err}) {
      if (s->fd < 0) continue;
      fds.push_back({s->fd, POLLIN, 0});
      owners.push_back({&w, s});
    }
  }
  if (poll(fds.data(), fds.size(), timeout_ms) < 0) return;
  if (fds[0].revents & POLLIN) {
    signalfd_siginfo info{};
    while (read(sigfd_, &info, sizeof(info)) == sizeof(info)) {
      const int sig = static_cast<int>(info.ssi_signo);
      if (sig == SIGINT || sig == SIGTERM) {
        if (pending_signal_ != 0) stopping_ = true;  // a second one: stop without waiting
        pending_signal_ = sig;
      }
    }
  }
  for (size_t i = 1; i < fds.size(); ++i) {
    if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
    auto [w, s] = owners[i];
    char buf[65536];
    const ssize_t n = read(s->fd, buf, sizeof(buf));
    if (n > 0) {
      s->partial.append(buf, static_cast<size_t>(n));
      emit(*w, *s, false);
    } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
      close(s->fd);
      s->fd = -1;
      emit(*w, *s, true);
    }
  }
  reap();
}

void Agent::reap() {
  for (Worker& w : workers_) {
    if (!w.running) continue;
    int status = 0;
    if (waitpid(w.pid, &status, WNOHANG) != w.pid) continue;
    w.running = false;
    w.status = status;
    const bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    if (failed && !stopping_) failures_.push_back({w.rank, w.local_rank, w.pid, status, nowNs()});
  }
}

Outcome Agent::monitor() {
  const int interval_ms = std::max(1, static_cast<int>(o_.monitor_interval_s * 1000));
  const std::string trigger = facts_.dump_dir + "/" + kTriggerFile;
  for (;;) {
    pump(interval_ms);
    if (pending_signal_ != 0) return Outcome::kInterrupted;
    if (!failures_.empty()) return Outcome::kFailed;
    Outcome remote;
    if (multi() && remote_hang_.empty() && checkRemote(&remote)) {
      if (remote != Outcome::kHang) return remote;
      // Another node's rank hung: our ranks dump too, through our own trigger.
      writeOwnTrigger(0);
      superviseHang("hang", remote_hang_, attempt_start_ns_);
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
    const auto id = fileId(trigger);
    if (id && id != seen_trigger_) {
      seen_trigger_ = id;
      // The rank that saw the hang dumped before it wrote the trigger: any dump of this attempt
      // counts.
      const std::string text = readSmallFile(trigger);
      if (multi()) publishOnce("job/hang", host_ + ": " + text);
      superviseHang("hang", text, attempt_start_ns_);
      if (o_.on_hang == OnHang::kExit) return Outcome::kHang;
      // Every rank that times out writes the trigger again; those written while this report was
      // made belong to it.
      seen_trigger_ = fileId(trigger);
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
  if (o_.node_rank > 0) in.file_name = "report.node" + std::to_string(o_.node_rank) + ".json";
  for (const Worker& w : workers_) {
    WorkerInfo info{w.rank, w.local_rank, w.pid, w.running, ""};
    if (!w.running) {
      info.ended = WIFSIGNALED(w.status) ? signalName(WTERMSIG(w.status))
                                         : "exit code " + std::to_string(WEXITSTATUS(w.status));
    }
    in.workers.push_back(info);
  }
  std::ostringstream text;
  auto path = writeHangReport(in, text);
  const std::string s = text.str();
  (void)!write(STDERR_FILENO, s.data(), s.size());
  if (!path.ok()) say(path.status().message());
}

void Agent::writeOwnTrigger(int signo) {
  // Same format as the recorder's own trigger (recorder/watchdog.cc): the run id makes every rank
  // of this run dump with reason "trigger".
  const std::string path = facts_.dump_dir + "/" + kTriggerFile;
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  std::ofstream(tmp) << "run_id=" << facts_.run_id << "\nhost=" << host_ << "\npid=" << getpid()
                     << "\nrank=-1\nreason=" << (signo != 0 ? "interrupt" : "hang") << "\ndetail="
                     << (signo != 0 ? "cxxrun received " + signalName(signo)
                                    : "hang on another node: " + remote_hang_)
                     << "\n";
  if (std::rename(tmp.c_str(), path.c_str()) != 0) say("cxxrun: cannot write " + path);
  seen_trigger_ = fileId(path);
  say("cxxrun: " +
      (signo != 0 ? signalName(signo) + " received" : std::string("another node hung")) +
      ": asking every rank to dump (" + path + ")");
}

void Agent::stopWorkers() {
  stopping_ = true;
  bool any = false;
  for (const Worker& w : workers_) {
    if (!w.running) continue;
    kill(-w.pid, SIGTERM);
    any = true;
  }
  if (any) {
    const double deadline = monoS() + o_.grace_period_s;
    for (;;) {
      bool running = false;
      for (const Worker& w : workers_) running |= w.running;
      if (!running || monoS() >= deadline) break;
      pump(20);
    }
    for (const Worker& w : workers_) {
      if (w.running) kill(-w.pid, SIGKILL);
    }
    for (Worker& w : workers_) {
      if (!w.running) continue;
      waitpid(w.pid, &w.status, 0);
      w.running = false;
    }
  }
  pump(0);
  closeStreams();
}

void Agent::closeStreams() {
  for (Worker& w : workers_) {
    for (Stream* s : {&w.out, &w.err}) {
      if (s->fd >= 0) close(s->fd);
      s->fd = -1;
      emit(w, *s, true);
      if (s->log >= 0) close(s->log);
      s->log = -1;
    }
  }
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

void Agent::printFailureSummary() const {
  std::ostringstream s;
  s << "cxxrun: worker group failed (run " << facts_.run_id << ", attempt " << attempt_ << ")\n";
  s << "Failures:\n";
  if (failures_.size() <= 1) s << "  <NO_OTHER_FAILURES>\n";
  for (size_t i = 1; i < failures_.size(); ++i)
    s << "[" << i << "]:\n" << failureText(failures_[i]);
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

int Agent::rendezvous(bool hosting) {
  auto client = StoreClient::connect(facts_.store_endpoint, facts_.token, o_.join_timeout_s);
  if (!client.ok()) {
    const std::string why = client.status().message();
    if (why.find("wrong job token") != std::string::npos) {
      say("cxxrun: port " + std::to_string(o_.master_port) + " on " + o_.master_addr +
          " is in use by another job (another run id or token): use another --master-port");
    } else {
      say("cxxrun: cannot join the job's store: " + why);
    }
    return kExitUsage;
  }
  rdzv_.emplace(std::move(client).value());
  if (o_.node_rank < 0) {
    if (hosting) {
      o_.node_rank = 0;
    } else {
      auto n = rdzv_->add("rdzv/next", 1);
      if (!n.ok()) return say("cxxrun: " + n.status().message()), kExitUsage;
      if (*n >= o_.nnodes) {
        say("cxxrun: more agents joined than --nnodes " + std::to_string(o_.nnodes) +
            " (this would be node " + std::to_string(*n) + ")");
        return kExitUsage;
      }
      o_.node_rank = static_cast<int>(*n);
    }
  }
  const std::string me = host_ + " (pid " + std::to_string(getpid()) + ")";
  const std::string key = "rdzv/node/" + std::to_string(o_.node_rank);
  auto claimed = rdzv_->compareSet(key, "", me);
  if (!claimed.ok()) return say("cxxrun: " + claimed.status().message()), kExitUsage;
  if (*claimed != me) {
    say("cxxrun: node rank " + std::to_string(o_.node_rank) + " is already taken by " + *claimed);
    return kExitUsage;
  }
  std::vector<std::string> keys;
  for (int r = 0; r < o_.nnodes; ++r) keys.push_back("rdzv/node/" + std::to_string(r));
  say("cxxrun: node rank " + std::to_string(o_.node_rank) + " of " + std::to_string(o_.nnodes) +
      "; waiting up to " + std::to_string(static_cast<int>(o_.join_timeout_s)) +
      " s for the other nodes (store " + facts_.store_endpoint + ")");
  if (!rdzv_->wait(keys, o_.join_timeout_s).ok()) {
    std::string missing, joined;
    for (int r = 0; r < o_.nnodes; ++r) {
      auto v = rdzv_->tryGet(keys[static_cast<size_t>(r)]);
      if (v.ok() && v->has_value()) {
        joined += (joined.empty() ? "" : ", ") + std::to_string(r) + " on " + **v;
      } else {
        missing += (missing.empty() ? "" : ",") + std::to_string(r);
      }
    }
    say("cxxrun: node(s) " + missing + " did not join within " +
        std::to_string(static_cast<int>(o_.join_timeout_s)) + " s (joined: " + joined + ")");
    return kExitUsage;
  }
  if (o_.node_rank == 0) {
    facts_.worker_master_port = freePort();
    if (!rdzv_->set("rdzv/master_port", std::to_string(facts_.worker_master_port)).ok())
      return say("cxxrun: lost the job's store"), kExitUsage;
  } else {
    auto port = rdzv_->get("rdzv/master_port", o_.join_timeout_s);
    if (!port.ok()) return say("cxxrun: " + port.status().message()), kExitUsage;
    facts_.worker_master_port = std::atoi(port->c_str());
  }
  return kExitOk;
}

void Agent::publishOnce(const std::string& key, const std::string& value) {
  if (!rdzv_ || std::find(published_.begin(), published_.end(), key) != published_.end()) return;
  published_.push_back(key);
  // First writer wins: the job's first failure stays the one every node names.
  (void)rdzv_->compareSet(key, "", value);
}

// True when another node reported something that ends this node's group too.
bool Agent::checkRemote(Outcome* outcome) {
  auto failed = rdzv_->tryGet("job/failed");
  if (!failed.ok()) {
    remote_failure_ = "  lost the job's store at " + facts_.store_endpoint +
                      " (did node 0 end?): " + failed.status().message() + "\n";
    *outcome = Outcome::kRemoteFailed;
    return true;
  }
  if (failed->has_value()) {
    remote_failure_ = **failed;
    *outcome = Outcome::kRemoteFailed;
    return true;
  }
  auto hang = rdzv_->tryGet("job/hang");
  if (hang.ok() && hang->has_value() &&
      std::find(published_.begin(), published_.end(), "job/hang") == published_.end()) {
    remote_hang_ = **hang;
    *outcome = Outcome::kHang;
    return true;
  }
  return false;
}

int Agent::waitForOtherNodes() {
  publishOnce("job/done/" + std::to_string(o_.node_rank), host_);
  // Node 0 serves the store: it stays until every node is done, and learns of their failures.
  if (o_.node_rank != 0) return kExitOk;
  const int interval_ms = std::max(1, static_cast<int>(o_.monitor_interval_s * 1000));
  for (;;) {
    bool all = true;
    for (int r = 0; r < o_.nnodes && all; ++r) {
      auto v = rdzv_->tryGet("job/done/" + std::to_string(r));
      all = v.ok() && v->has_value();
    }
    if (all) return kExitOk;
    Outcome remote;
    if (checkRemote(&remote) && remote == Outcome::kRemoteFailed) {
      printFailureSummary();
      return kExitWorkerFailed;
    }
    pump(interval_ms);
    if (pending_signal_ != 0) return 128 + pending_signal_;
  }
}

}  // namespace

int runAgent(const Options& options, const std::string& exe_path) {
  Agent agent(options, exe_path);
  return agent.run();
}

}  // namespace ncclrec::launcher
