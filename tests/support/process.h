// Helpers for tests that run programs: spawn one with a chosen environment (LD_PRELOAD included),
// capture its exit status and output with a timeout; temporary directories; whole-file reads.
//
// Programs are started with posix_spawn, never through a shell, each in its own process group so
// that a timeout kills whatever it forked too. Output goes to anonymous memory files rather than
// pipes: a child that writes a lot never blocks on a test that is not reading yet, and a grandchild
// that keeps the descriptors open cannot hold up the wait.
#ifndef NCCLREC_TESTS_SUPPORT_PROCESS_H_
#define NCCLREC_TESTS_SUPPORT_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ncclrec::support {

struct SpawnOptions {
  std::vector<std::string> argv;           // argv[0] is the program's path: no PATH search
  std::map<std::string, std::string> env;  // set in the child, over the inherited environment
  std::vector<std::string> unset_env;      // removed from the inherited environment
  std::string ld_preload;                  // LD_PRELOAD of the child when not empty
  bool inherit_env = true;                 // false: the child sees only `env` and `ld_preload`
  std::string cwd;                         // the child's working directory; empty: ours
};

struct ProcessResult {
  std::string error;       // why the program could not be started; empty when it ran
  bool timed_out = false;  // the timeout expired and the process group was killed (SIGKILL)
  int exit_code = -1;      // exit status when it exited, else -1
  int term_signal = 0;     // the signal that ended it, else 0
  std::string out;
  std::string err;

  bool exitedWith(int code) const { return error.empty() && term_signal == 0 && exit_code == code; }
  // One paragraph for a failed expectation: how it ended, then both outputs.
  std::string describe() const;
};

// A running child. Destroying it kills its process group and reaps it if it is still running.
class Process {
 public:
  // nullptr, with the reason in *error, when the program cannot be started (bad path, not
  // executable, empty argv).
  static std::unique_ptr<Process> start(const SpawnOptions& options, std::string* error);
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  // What the child wrote so far; callable while it runs.
  std::string stdoutSoFar() const;
  std::string stderrSoFar() const;
  // Polls until the child's stdout contains `needle`; false when the timeout expires or the
  // child ended without writing it.
  bool waitForStdout(std::string_view needle, std::chrono::milliseconds timeout);
  // Sends a signal to the child only (not its process group); false if it already ended.
  bool signal(int signo);
  // Waits for the child to end, killing its process group when the timeout expires. Call once.
  ProcessResult wait(std::chrono::milliseconds timeout);

 private:
  Process(pid_t pid, int outFd, int errFd) : pid_(pid), outFd_(outFd), errFd_(errFd) {}
  bool ended() const;
  void reap();

  pid_t pid_;
  int outFd_;
  int errFd_;
  bool reaped_ = false;
  int status_ = 0;
};

// Starts the program and waits for it (see Process::wait).
ProcessResult runProcess(const SpawnOptions& options, std::chrono::milliseconds timeout);

// A fresh directory under $TMPDIR (or /tmp), removed with its contents on destruction.
class TempDir {
 public:
  explicit TempDir(std::string_view prefix = "ncclrec-test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // Empty when the directory could not be created.
  const std::string& path() const { return path_; }
  std::string file(std::string_view name) const;

 private:
  std::string path_;
};

// The whole content of a file; nullopt when it cannot be read.
std::optional<std::string> readFile(const std::string& path);

}  // namespace ncclrec::support

#endif  // NCCLREC_TESTS_SUPPORT_PROCESS_H_
