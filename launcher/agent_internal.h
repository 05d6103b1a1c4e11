// Internals of the cxxrun agent (agent.h), shared by its files, one concern each:
//   agent.cc             the run's set-up: signals, NCCL, run id, token, the store, the rendezvous
//   agent_attempts.cc    the attempt loop: start the group, watch it, restart or end the job
//   agent_workers.cc     the worker group: start, output, reaping, stop, the signalfd
//   agent_supervise.cc   hangs, interrupts and failures: the trigger file, waitForDumps,
//   writeReport() agent_live.cc        live hang detection on this attempt's black boxes
//   (live/detector.h) agent_rendezvous.cc  multi-node: the agents' rendezvous, fixed or elastic,
//   and what they tell
//                        each other through the store (failures, hangs, restarts, the job's end)
//   agent_gather.cc      multi-node hangs: the other nodes' recordings sent to node 0 for one
//                        verdict
// with agent_util.h (clocks, names, knobs) and failure_text.h (torchrun's failure text, pure).
// Not for use outside the agent.
//
// Store keys of the agents: "rdzv/..." for the rendezvous, "job/a<ATTEMPT>/..." for what happens
// in one attempt, "alive/<NODE>" for the heartbeats (heartbeat.h), "top/<NODE>" for where each
// node's ncclrec-top server listens (topKey) (workers use "attempt<N>/...", store_client.h).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/text.h"
#include "format/params_table.h"
#include "format/recording_files.h"
#include "format/store_client.h"
#include "launcher/agent_util.h"
#include "launcher/failure_text.h"
#include "launcher/heartbeat.h"
#include "launcher/options.h"
#include "launcher/store_server.h"
#include "launcher/worker_env.h"
#include "live/collector.h"
#include "live/detector.h"
#include "report/hang_report.h"

namespace ncclrec::launcher {

// Past NCCLREC_DUMP_WAIT, how long node 0 waits for the other nodes' recordings: they wait for
// their own ranks' dumps as long as node 0 did, starting up to a monitor interval later, then send.
constexpr double kSendMarginS = 5;

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
  bool stopped = false;  // it ended after this agent began stopping the workers (its own signal)
  int status = 0;
  Stream out, err;
};

enum class Outcome { kSucceeded, kFailed, kRemoteFailed, kHang, kInterrupted };

// "top/<NODE>": where node NODE's ncclrec-top server listens, as node 0 reaches it.
std::string topKey(int node);

class Agent {
 public:
  Agent(const Options& o, std::string exe) : o_(o), exe_(std::move(exe)) {}
  int run();

 private:
  // agent.cc: everything before the first attempt; kExitOk or the exit code to end with.
  int start();
  int openSignals();
  std::string newRunId() const;
  int startStore(bool* hosting);
  // agent_attempts.cc
  int runAttempts();
  int beginAttempt();
  Outcome monitor();
  int endOnSignal();
  // agent_workers.cc
  bool startWorkers();
  void pump(int timeout_ms);
  void emit(Worker& w, Stream& s, bool flush_partial);
  void reap();
  void stopWorkers();
  void closeStreams();
  // agent_supervise.cc. A hang (a rank's trigger, or another node's hang) or an interrupt: every
  // rank dumps (waitForDumps), then one report; on several nodes the first of an attempt is
  // job-wide, on node 0.
  // `detected`: the live detector's hang, for the report's timeline (nullptr otherwise).
  void superviseHang(report::ReportReason reason, const std::string& trigger_text, int64_t since_ns,
                     const live::DetectorEvent* detected = nullptr);
  // agent_live.cc: a detector on this attempt's directory (none with NCCLREC_WATCHER=off), and
  // its poll every half second from monitor() (`now`: at once, as the job ends, so that a warned
  // stall says it resumed): warnings said, a hang returned.
  void startLive();
  std::optional<live::DetectorEvent> pollLive(bool now = false);
  std::optional<live::DetectorEvent> detectOnce();  // one collect() and detector step
  // Node 0 of several: reads the other nodes' ranks through their agents while its ranks wait
  // for ranks it cannot see, and stops once the job moves (agent_live.cc). True when it just
  // began to; *silent: the nodes left out, their heartbeat silent for kSilentNodeS.
  bool widenLive(std::vector<int>* silent);
  // The hang a silent node makes of a wait for ranks node 0 cannot see (once per stall).
  std::optional<live::DetectorEvent> silentNodeHang(const std::vector<int>& silent);
  // Nodes but node 0: publishes where this node's ncclrec-top server listens (topKey), as node 0
  // reaches it, so that node 0 can widen its live view to this node's ranks.
  void shareTopEndpoint(int port);
  // Several nodes: the detection's timeline in the store (jobKey("hang_timeline"), JSON, first
  // writer wins), so that the report another node makes of this hang has it too; and, for a hang
  // published by another node, that node's timeline into the report's input (false: none).
  void publishTimeline(const live::DetectorEvent& hang);
  bool readRemoteTimeline(report::HangReportInput* in);
  // The end of an attempt that failed with no restart left: the ranks still running dump first
  // (when the attempt recorded anything), then they are stopped, the summary is printed and, with
  // recordings, the analyzer's verdict and report.json follow.
  void finishFailure();
  // True when every running worker with a black box (it called NCCL) has a dump written at or
  // after `since_ns`.
  bool allDumped(int64_t since_ns) const;
  // Pumps output and signals until allDumped(since_ns), `wait_s` passed or a second signal asks
  // to stop; with `stop_on_signal`, any new signal ends the wait too. Returns the seconds waited.
  double waitForDumps(int64_t since_ns, double wait_s, bool stop_on_signal);
  // Prints `in`'s report on stderr and writes it beside the dumps of this attempt (run, attempt,
  // reason, dump directory and this node's file name are filled in here). Returns report.json's
  // path, or the error, already said.
  base::StatusOr<std::string> writeReport(report::ReportReason reason, report::HangReportInput in);
  // Writes the trigger file that makes every rank of this run dump; returns its text.
  std::string writeTrigger(report::ReportReason reason, const std::string& detail);
  std::string triggerPath() const {
    return facts_.dump_dir + "/" + std::string(format::kTriggerFileName);
  }
  void writeOwnTrigger(int signo);
  std::vector<report::WorkerInfo> workerInfos() const;
  void printFailureSummary() const;
  // Multi-node: the agents' rendezvous and what they tell each other through the store.
  int rendezvous(bool hosting);
  int rendezvousFixed(bool hosting, const std::string& me);
  int rendezvousElastic(bool hosting, const std::string& me);
  int closeElastic(const std::string& me, const std::string& range, int* world);
  int joinElastic(const std::string& me, const std::string& range, int* world);
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
  bool sendRecordingsToNodeZero(const std::vector<report::WorkerInfo>& workers, double wait_s);
  void receiveFromOtherNodes(report::HangReportInput* in, double deadline_s);
  // Node 0: observes `node`'s heartbeat in the store; seconds it has been silent.
  double silentFor(SilenceWatch* watch, int node);
  std::string nodeSilentLine(int node, double silent_s) const;
  // Node 0, after the job-wide report: tells the other nodes where it is and waits a moment for
  // those that sent recordings to read it (then the store may go away).
  void shareReport(const base::StatusOr<std::string>& path,
                   const std::vector<report::NodeInfo>& nodes);
  // More than one node: before an elastic rendezvous closes, MAX; after it, the nodes that joined.
  bool multi() const { return o_.nnodes > 1; }
  // What another node's hang report is about: Ctrl-C there publishes "interrupt on HOST (SIG)".
  report::ReportReason remoteHangReason() const {
    return remote_hang_.rfind("interrupt on ", 0) == 0 ? report::ReportReason::kInterrupt
                                                       : report::ReportReason::kHang;
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
  std::string host_ = base::hostName();
  int attempt_ = 0;
  int64_t attempt_start_ns_ = 0;
  std::vector<Worker> workers_;
  std::vector<Failure> failures_;
  std::optional<format::FileStamp> seen_trigger_;
  std::optional<format::StoreClient>
      rdzv_;  // multi-node only: this agent's connection to the store
  std::vector<std::string> published_;
  std::string remote_failure_;       // what another node reported as the attempt's first failure
  std::string remote_failure_line_;  // the same in one line, for the restart message
  std::string remote_hang_;          // set when another node reported a hang
  bool hang_shared_ = false;  // this attempt's hang is known to every node (published or seen)
  bool gathered_ = false;     // this attempt's job-wide hang report was made (or sent)
  bool store_lost_ = false;   // node 0's store went away: no restart, no more rendezvous
  std::vector<std::string> node_hosts_;       // by node rank, after the rendezvous
  std::string node0_run_dir_;                 // node 0's run directory, where the job's report goes
  std::optional<HeartbeatSender> heartbeat_;  // nodes but node 0, after the rendezvous: pump()
  std::unique_ptr<live::Collector> live_;     // this attempt's black boxes, read live
  std::optional<live::Detector> detector_;
  double next_live_s_ = 0;  // monoS() of the next detection
  SilenceWatch silence_;    // node 0: the heartbeats, seen while it widens and while it gathers
  std::map<int, std::string> top_endpoints_;  // node 0: the other nodes' topKey, once read
  bool said_widen_ = false;                   // node 0: widenLive() said what it does
  int64_t silent_hang_since_ns_ = 0;          // node 0: the stall silentNodeHang() declared
  int64_t detected_ns_ = 0;  // when the live detector declared the hang being supervised
};

}  // namespace ncclrec::launcher
