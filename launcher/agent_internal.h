// Internals of the cxxrun agent (agent.h), shared by its files: agent.cc (the run: store, attempts,
// hang supervision, failure summary), agent_workers.cc (the worker group: start, output, reaping,
// stop, the signalfd) and agent_rendezvous.cc (multi-node: the agents' rendezvous and what they
// tell each other through the store). Not for use outside the agent.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "launcher/options.h"
#include "launcher/store_client.h"
#include "launcher/store_server.h"
#include "launcher/worker_env.h"

namespace ncclrec::launcher {

constexpr const char* kTriggerFile = "ncclrec.trigger";  // recorder/watchdog.h kTriggerFileName

int64_t nowNs();
double monoS();
void say(const std::string& line);
std::string hostName();
std::string signalName(int sig);
int freePort();

struct FileId {
  int64_t mtime_ns = 0;
  uint64_t ino = 0;
  bool operator==(const FileId&) const = default;
};

std::optional<FileId> fileId(const std::string& path);

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

}  // namespace ncclrec::launcher
