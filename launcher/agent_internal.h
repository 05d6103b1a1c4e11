// Internals of the cxxrun agent (agent.h), shared by its files: agent.cc (the run: store, attempts,
// hang supervision, failure summary), agent_workers.cc (the worker group: start, output, reaping,
// stop, the signalfd), agent_rendezvous.cc (multi-node: the agents' rendezvous, fixed or elastic,
// and what they tell each other through the store: failures, hangs, restarts, the job's end) and
// agent_gather.cc (multi-node hangs: the other nodes' recordings sent to node 0 for one verdict).
// Not for use outside the agent.
//
// Store keys of the agents: "rdzv/..." for the rendezvous, "job/a<ATTEMPT>/..." for what happens
// in one attempt (workers use "attempt<N>/...", store_client.h).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "launcher/hang_report.h"
#include "launcher/options.h"
#include "launcher/store_client.h"
#include "launcher/store_server.h"
#include "launcher/worker_env.h"
#include "recorder/format/recording_files.h"

namespace ncclrec::launcher {

// Past NCCLREC_DUMP_WAIT, how long node 0 waits for the other nodes' recordings: they wait for
// their own ranks' dumps as long as node 0 did, starting up to a monitor interval later, then send.
constexpr double kSendMarginS = 5;

int64_t nowNs();
double monoS();
void say(const std::string& line);
std::string hostName();
std::string signalName(int sig);
int freePort();

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
  // The end of an attempt that failed with no restart left: the ranks still running dump first
  // (when the attempt recorded anything), then they are stopped, the summary is printed and, with
  // recordings, the analyzer's verdict and report.json follow.
  void finishFailure();
  // Writes the trigger file that makes every rank of this run dump; returns its text.
  std::string writeTrigger(const std::string& reason, const std::string& detail);
  std::string triggerPath() const {
    return facts_.dump_dir + "/" + std::string(format::kTriggerFileName);
  }
  void writeOwnTrigger(int signo);
  std::vector<WorkerInfo> workerInfos() const;
  void printFailureSummary() const;
  std::string failureText(const Failure& f) const;
  std::string failureLine(const Failure& f) const;
  // Multi-node: the agents' rendezvous and what they tell each other through the store.
  int rendezvous(bool hosting);
  int rendezvousFixed(bool hosting, const std::string& me);
  int rendezvousElastic(bool hosting, const std::string& me);
  int agreeOnMasterPort();
  bool checkRemote(Outcome* outcome);
  std::string publishOnce(const std::string& key, const std::string& value);
  void publishFailure();
  Outcome waitForJobEnd();
  bool restartBarrier();
  // Polls until every key is set, pumping worker output and signals meanwhile; false on timeout,
  // on a signal taken meanwhile, or when the store is lost. *missing: indexes of the keys unset.
  bool waitForKeys(const std::vector<std::string>& keys, double timeout_s,
                   std::vector<int>* missing);
  // Multi-node hangs: the first of an attempt gets one job-wide report on node 0.
  bool sendRecordingsToNodeZero(const std::vector<WorkerInfo>& workers, double wait_s);
  void receiveFromOtherNodes(HangReportInput* in, double deadline_s);
  // More than one node: before an elastic rendezvous closes, MAX; after it, the nodes that joined.
  bool multi() const { return o_.nnodes > 1; }
  // What another node's hang report is about: Ctrl-C there publishes "interrupt on HOST (SIG)".
  std::string remoteHangReason() const {
    return remote_hang_.rfind("interrupt on ", 0) == 0 ? "interrupt" : "hang";
  }
  std::string dumpDir() const { return run_dir_ + "/attempt_" + std::to_string(attempt_); }
  // The store key of `what` in the current attempt.
  std::string jobKey(const std::string& what) const {
    return "job/a" + std::to_string(attempt_) + "/" + what;
  }

  Options o_;
  std::string exe_;
  int sigfd_ = -1;
  int pending_signal_ = 0;
  int signals_seen_ = 0;  // SIGINT/SIGTERM taken so far
  bool stopping_ = false;
  std::unique_ptr<StoreServer> store_;
  JobFacts facts_;
  std::string run_dir_;
  std::string host_ = hostName();
  int attempt_ = 0;
  int64_t attempt_start_ns_ = 0;
  std::vector<Worker> workers_;
  std::vector<Failure> failures_;
  std::optional<format::FileStamp> seen_trigger_;
  std::optional<StoreClient> rdzv_;  // multi-node only: this agent's connection to the store
  std::vector<std::string> published_;
  std::string remote_failure_;       // what another node reported as the attempt's first failure
  std::string remote_failure_line_;  // the same in one line, for the restart message
  std::string remote_hang_;          // set when another node reported a hang
  bool hang_shared_ = false;  // this attempt's hang is known to every node (published or seen)
  bool gathered_ = false;     // this attempt's job-wide hang report was made (or sent)
  bool store_lost_ = false;   // node 0's store went away: no restart, no more rendezvous
  std::vector<std::string> node_hosts_;  // by node rank, after the rendezvous
  std::string node0_run_dir_;            // node 0's run directory, where the job's report goes
};

}  // namespace ncclrec::launcher
