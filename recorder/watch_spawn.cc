#include "recorder/watch_spawn.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "recorder/log.h"

extern char** environ;

namespace ncclrec::recorder {
namespace {

bool executable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

const char* errorText(int err) {
  const char* text = strerrordesc_np(err);
  return text != nullptr ? text : "unknown error";
}

}  // namespace

std::string resolveWatcher(const std::string& setting, const std::string& library_dir,
                           std::string* why) {
  if (setting == "off") return "";
  if (setting != "auto") {
    if (executable(setting)) return setting;
    *why = "NCCLREC_WATCHER=" + setting + " is not an executable program";
    return "";
  }
  if (!library_dir.empty() && executable(library_dir + "/../bin/ncclrec-watch"))
    return library_dir + "/../bin/ncclrec-watch";
  const char* path = getenv("PATH");
  for (std::string rest = path != nullptr ? path : ""; !rest.empty();) {
    const size_t colon = rest.find(':');
    const std::string dir = rest.substr(0, colon);
    rest = colon == std::string::npos ? "" : rest.substr(colon + 1);
    if (!dir.empty() && executable(dir + "/ncclrec-watch")) return dir + "/ncclrec-watch";
  }
  *why =
      "ncclrec-watch is neither in " +
      (library_dir.empty() ? std::string("../bin beside libncclrec.so") : library_dir + "/../bin") +
      " nor on PATH";
  return "";
}

WatchSpawner::~WatchSpawner() {
  reap();
  if (lock_fd_ >= 0) close(lock_fd_);
  if (spawn_ready_) {
    posix_spawn_file_actions_destroy(&actions_);
    posix_spawnattr_destroy(&attr_);
  }
}

bool WatchSpawner::init(const WatchSpawnConfig& config, std::string* why) {
  config_ = config;
  program_ = resolveWatcher(config.watcher, config.library_dir, why);
  if (program_.empty()) return false;
  arg_storage_ = {program_, "--daemonize", "--dir", config.dir};
  if (!config.run_id.empty()) arg_storage_.insert(arg_storage_.end(), {"--run-id", config.run_id});
  for (std::string& a : arg_storage_) argv_.push_back(a.data());
  argv_.push_back(nullptr);
  // The environment as it is now, without LD_PRELOAD: the watcher records nothing itself.
  for (char** e = environ; e != nullptr && *e != nullptr; ++e)
    if (strncmp(*e, "LD_PRELOAD=", 11) != 0) env_storage_.emplace_back(*e);
  for (std::string& e : env_storage_) envp_.push_back(e.data());
  envp_.push_back(nullptr);
  const std::string lock_path = config.dir + "/" + std::string(kWatchLockName);
  lock_fd_ = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock_fd_ < 0) {
    *why = lock_path + ": " + errorText(errno);
    return false;
  }
  // stdin and stdout /dev/null, stderr the rank's, nothing else of this process; signals as a
  // fresh program has them (the watchdog thread blocks every signal, and its mask is inherited).
  posix_spawn_file_actions_init(&actions_);
  posix_spawnattr_init(&attr_);
  spawn_ready_ = true;
  posix_spawn_file_actions_addopen(&actions_, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions_, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addclosefrom_np(&actions_, 3);
  sigset_t none;
  sigset_t all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr_, &none);
  posix_spawnattr_setsigdefault(&attr_, &all);
  posix_spawnattr_setflags(&attr_, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  enabled_ = true;
  return true;
}

bool WatchSpawner::lockHeld() const {
  if (flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) return errno == EWOULDBLOCK;
  flock(lock_fd_, LOCK_UN);
  return false;
}

void WatchSpawner::reap() {
  if (child_ <= 0) return;
  int status = 0;
  const pid_t r = waitpid(child_, &status, WNOHANG);
  if (r == 0) return;  // still starting the watcher
  child_ = 0;
  // r < 0: the application reaped it (waitpid(-1)); its status is unknown, the watcher may run.
  if (r > 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
    snprintf(failure_, sizeof(failure_), "%s exited with %s %d", program_.c_str(),
             WIFEXITED(status) ? "status" : "signal",
             WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    fail();
  }
}

void WatchSpawner::fail() {
  enabled_ = false;
  NCCLREC_WARN(kLogWatchdog, "live detection off: %s; hangs are declared after NCCLREC_TIMEOUT",
               failure_);
}

bool WatchSpawner::poll(int64_t now_ns, int64_t oldest_incomplete_ns) {
  if (!enabled_) return false;
  reap();
  if (!enabled_ || oldest_incomplete_ns <= 0 || child_ > 0) return false;
  if (static_cast<double>(now_ns - oldest_incomplete_ns) < config_.stall_s * 1e9) return false;
  if (started_ > 0 && static_cast<double>(now_ns - last_start_ns_) < config_.every_s * 1e9)
    return false;
  if (lockHeld()) return false;
  last_start_ns_ = now_ns;
  pid_t pid = 0;
  const int err =
      posix_spawn(&pid, program_.c_str(), &actions_, &attr_, argv_.data(), envp_.data());
  if (err != 0) {
    snprintf(failure_, sizeof(failure_), "cannot start %s: %s", program_.c_str(), errorText(err));
    fail();
    return false;
  }
  child_ = pid;
  ++started_;
  return true;
}

}  // namespace ncclrec::recorder
