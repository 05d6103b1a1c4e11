#include "tests/support/process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <thread>

extern char** environ;

namespace ncclrec::support {
namespace {

constexpr auto kPollInterval = std::chrono::milliseconds(2);

std::string readFd(int fd) {
  std::string data;
  char buffer[65536];
  off_t offset = 0;
  for (;;) {
    const ssize_t n = pread(fd, buffer, sizeof(buffer), offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    data.append(buffer, static_cast<size_t>(n));
    offset += n;
  }
  return data;
}

std::vector<std::string> childEnvironment(const SpawnOptions& options) {
  std::map<std::string, std::string> vars;
  if (options.inherit_env) {
    for (char** entry = environ; *entry != nullptr; ++entry) {
      const char* equals = std::strchr(*entry, '=');
      if (equals == nullptr) continue;
      vars.emplace(std::string(*entry, static_cast<size_t>(equals - *entry)),
                   std::string(equals + 1));
    }
  }
  for (const std::string& name : options.unset_env) vars.erase(name);
  for (const auto& [name, value] : options.env) vars[name] = value;
  if (!options.ld_preload.empty()) vars["LD_PRELOAD"] = options.ld_preload;
  std::vector<std::string> env;
  env.reserve(vars.size());
  for (const auto& [name, value] : vars) env.push_back(name + "=" + value);
  return env;
}

std::vector<char*> cStrings(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  pointers.reserve(strings.size() + 1);
  for (std::string& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

}  // namespace

std::string ProcessResult::describe() const {
  std::ostringstream text;
  if (!error.empty()) {
    text << "not started: " << error;
    return text.str();
  }
  if (timed_out) text << "timed out, ";
  if (term_signal != 0) {
    text << "killed by signal " << term_signal << " (" << strsignal(term_signal) << ")";
  } else {
    text << "exited with " << exit_code;
  }
  text << "\n--- stdout ---\n" << out << "--- stderr ---\n" << err << "--------------";
  return text.str();
}

std::unique_ptr<Process> Process::start(const SpawnOptions& options, std::string* error) {
  if (options.argv.empty()) {
    *error = "empty argv";
    return nullptr;
  }
  const int outFd = memfd_create("stdout", MFD_CLOEXEC);
  const int errFd = memfd_create("stderr", MFD_CLOEXEC);
  const int nullFd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  auto closeAll = [&] {
    for (int fd : {outFd, errFd, nullFd}) {
      if (fd >= 0) close(fd);
    }
  };
  if (outFd < 0 || errFd < 0 || nullFd < 0) {
    *error = std::string("cannot create output files: ") + std::strerror(errno);
    closeAll();
    return nullptr;
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, nullFd, STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, outFd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, errFd, STDERR_FILENO);
  if (!options.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, options.cwd.c_str());
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  // A process group of its own, so a timeout can kill what it forked; default signal dispositions
  // and an empty mask, whatever the test runner left us with.
  sigset_t none;
  sigset_t all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setpgroup(&attributes, 0);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &all);
  posix_spawnattr_setflags(&attributes,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<std::string> argv = options.argv;
  std::vector<std::string> env = childEnvironment(options);
  std::vector<char*> argvPointers = cStrings(argv);
  std::vector<char*> envPointers = cStrings(env);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0].c_str(), &actions, &attributes, argvPointers.data(),
                             envPointers.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  close(nullFd);
  if (rc != 0) {
    *error = "cannot run " + argv[0] + ": " + std::strerror(rc);
    close(outFd);
    close(errFd);
    return nullptr;
  }
  return std::unique_ptr<Process>(new Process(pid, outFd, errFd));
}

Process::~Process() {
  if (!reaped_) {
    kill(-pid_, SIGKILL);
    reap();
  }
  close(outFd_);
  close(errFd_);
}

// Whether the child has ended, leaving it a zombie: while it is one its pid, and so its process
// group id, cannot be reused, which makes the group kill that follows safe.
bool Process::ended() const {
  if (reaped_) return true;
  siginfo_t info{};
  for (;;) {
    const int rc = waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT);
    if (rc < 0 && errno == EINTR) continue;
    return rc < 0 || info.si_pid == pid_;
  }
}

void Process::reap() {
  if (reaped_) return;
  while (waitpid(pid_, &status_, 0) < 0 && errno == EINTR) {
  }
  reaped_ = true;
}

std::string Process::stdoutSoFar() const { return readFd(outFd_); }
std::string Process::stderrSoFar() const { return readFd(errFd_); }

bool Process::waitForStdout(std::string_view needle, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (stdoutSoFar().find(needle) != std::string::npos) return true;
    if (ended() || std::chrono::steady_clock::now() >= deadline) {
      return stdoutSoFar().find(needle) != std::string::npos;
    }
    std::this_thread::sleep_for(kPollInterval);
  }
}

bool Process::signal(int signo) { return !reaped_ && kill(pid_, signo) == 0; }

ProcessResult Process::wait(std::chrono::milliseconds timeout) {
  ProcessResult result;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!ended()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      result.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(kPollInterval);
  }
  // On a timeout this ends the child; otherwise whatever it forked, so nothing outlives the test.
  if (!reaped_) kill(-pid_, SIGKILL);
  reap();
  if (WIFEXITED(status_)) result.exit_code = WEXITSTATUS(status_);
  if (WIFSIGNALED(status_)) result.term_signal = WTERMSIG(status_);
  result.out = stdoutSoFar();
  result.err = stderrSoFar();
  return result;
}

ProcessResult runProcess(const SpawnOptions& options, std::chrono::milliseconds timeout) {
  std::string error;
  std::unique_ptr<Process> process = Process::start(options, &error);
  if (process == nullptr) {
    ProcessResult result;
    result.error = error;
    return result;
  }
  return process->wait(timeout);
}

TempDir::TempDir(std::string_view prefix) {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/" +
                        std::string(prefix) + "-XXXXXX";
  if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
}

TempDir::~TempDir() {
  if (path_.empty()) return;
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string TempDir::file(std::string_view name) const { return path_ + "/" + std::string(name); }

std::optional<std::string> readFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string data;
  char buffer[65536];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    data.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return data;
}

}  // namespace ncclrec::support
