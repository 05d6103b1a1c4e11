#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "launcher/agent_internal.h"
#include "launcher/worker_env.h"

extern char** environ;

namespace ncclrec::launcher {
namespace {

// The environment of worker `local_rank`: cxxrun's own, with the worker's variables over it.
std::vector<std::string> environmentOf(const Options& o, const JobFacts& facts, int local_rank) {
  const char* ld = std::getenv("LD_LIBRARY_PATH");
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq != nullptr) env[std::string(*e, static_cast<size_t>(eq - *e))] = eq + 1;
  }
  for (auto& [k, v] : workerEnv(o, facts, local_rank, ld != nullptr ? ld : "")) env[k] = v;
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

// In the forked child. Only async-signal-safe calls from here: the store's thread may hold locks.
[[noreturn]] void execWorker(pid_t parent, int out_fd, int err_fd, char* const* argv,
                             char* const* envp) {
  setpgid(0, 0);  // Ctrl-C reaches cxxrun only, which makes every rank dump first
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  signal(SIGPIPE, SIG_DFL);
  dup2(out_fd, STDOUT_FILENO);
  dup2(err_fd, STDERR_FILENO);
  execvpe(argv[0], argv, envp);
  const char* why = strerror(errno);
  (void)!write(STDERR_FILENO, "cxxrun: cannot run ", 19);
  (void)!write(STDERR_FILENO, argv[0], strlen(argv[0]));
  (void)!write(STDERR_FILENO, ": ", 2);
  (void)!write(STDERR_FILENO, why, strlen(why));
  (void)!write(STDERR_FILENO, "\n", 1);
  _exit(127);
}

}  // namespace

bool Agent::startWorkers() {
  workers_.assign(static_cast<size_t>(o_.nproc_per_node), Worker{});
  attempt_start_ns_ = base::realtimeNs();
  stopping_ = false;
  std::vector<char*> argv;
  for (const auto& a : o_.program) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (int lr = 0; lr < o_.nproc_per_node; ++lr) {
    Worker& w = workers_[static_cast<size_t>(lr)];
    w.local_rank = lr;
    w.rank = o_.node_rank * o_.nproc_per_node + lr;
    std::vector<std::string> env_strings = environmentOf(o_, facts_, lr);
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
    if (pid == 0) execWorker(parent, out_pipe[1], err_pipe[1], argv.data(), envp.data());
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
  // Every wait of the agent passes here: node 0 hears this node as long as it waits on anything.
  if (heartbeat_) heartbeat_->beat(monoS());
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
        ++signals_seen_;
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
    w.stopped = stopping_;
    w.status = status;
    const bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    if (failed && !stopping_)
      failures_.push_back({w.rank, w.local_rank, w.pid, status, base::realtimeNs()});
  }
}

void Agent::stopWorkers() {
  stopping_ = true;
  bool any = false;
  for (const Worker& w : workers_) {
    if (!w.running) continue;
    kill(-w.pid, SIGTERM);
    // A stopped process (SIGSTOP, a frozen rank) acts on SIGTERM only once continued.
    kill(-w.pid, SIGCONT);
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
      w.stopped = true;
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

}  // namespace ncclrec::launcher
