// What cxxrun shows and writes when a job hangs, is interrupted or fails: the dumps of every rank,
// the analyzer's verdict (or a per-rank table of where each one stopped), and report.json beside
// the dumps.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "format/report_json.h"

namespace ncclrec::report {

// A worker as the launcher knows it, whether or not it left a recording.
struct WorkerInfo {
  int rank = -1;
  int local_rank = -1;
  int pid = 0;
  bool running = true;
  std::string ended;     // "exit code 1", "SIGKILL" when not running
  bool stopped = false;  // it ended once the launcher began stopping the workers (its signal)
  int node = 0;          // node rank of the agent that started it
  std::string host;      // that agent's host name; "" matches a recording of that pid on any host
  bool no_data = false;  // a rank of a node that sent nothing: pid and state are unknown
  // Running: what /proc said of it when the report was made (base/proc_state.h), 0 and "" when
  // unknown. A stopped process ('T') or one in uninterruptible sleep ('D') cannot dump.
  char process_state = 0;
  std::string wchan;
};

// A node of a multi-node job, in node 0's job-wide report.
struct NodeInfo {
  int node = 0;
  std::string host;
  std::string dir;       // the directory holding its recordings; "" when none arrived
  size_t files = 0;      // recordings it sent (node 0: 0, its own are in dump_dir)
  bool no_data = false;  // it sent nothing in time: "no data from node N (host h)"
  // Not heard from (its agent's heartbeat in the job's store) for this many seconds when node 0
  // gave up waiting for it; 0: heard from. The analyzer can then name it (format::SilentNode).
  double silent_s = 0;
};

// Why the report is made: a rank wrote the trigger file (or another node's did), cxxrun was
// interrupted, a worker failed and no restart was left (the report follows the failure
// summary), or a job that no live detection reported on has ended (`ncclrec run`'s report at
// the end, made by ncclrec-watch --ended).
enum class ReportReason { kHang, kInterrupt, kFailure, kEnded };
// "hang", "interrupt", "failure", "ended": report.json's "reason".
std::string_view reportReasonName(ReportReason reason);

struct HangReportInput {
  std::string run_id;
  int attempt = 0;
  ReportReason reason = ReportReason::kInterrupt;
  std::string failure;       // kFailure: the first failure in one line ("rank 1 on h, exit code 1")
  std::string ended;         // kEnded: how the job ended in one line ("exit code 0", "SIGINT")
  std::string trigger_text;  // the trigger file's content, "" when none
  std::string dump_dir;
  std::vector<WorkerInfo> workers;
  double waited_s = 0;  // how long cxxrun waited for the dumps
  // report.json; other nodes of a multi-node job write report.nodeN.json, so that a dump
  // directory on a shared filesystem keeps every node's report.
  std::string file_name = std::string(format::report_json::kFileName);
  // Multi-node job-wide report (node 0): every node, and where the others' recordings were
  // written. Their directories are loaded with dump_dir; empty for a node-local report.
  std::vector<NodeInfo> nodes;
  std::vector<std::string> warnings;  // the launcher's own, e.g. files a node could not send
  // Live detection (live/detector.h), CLOCK_REALTIME ns, 0 when unknown: the stall began (the
  // last call or completion of any rank), and it was declared a hang. The report adds when its
  // verdict was printed.
  int64_t stall_began_ns = 0;
  int64_t detected_ns = 0;
  std::string detection;  // the detector's line, e.g. "hang (certain, no progress for 1.0 s): ..."
  // Another node's agent detected it: "node 1 (host nodeb)" (its clock gave the two times above);
  // "" when this tool did.
  std::string detected_by;
  std::string tool = "cxxrun";  // what the printed lines start with
};

// True when `dir` holds a dump (HOST.PID.N.REASON.ncclrec.pb) of process `pid` written at or
// after `since_ns` (CLOCK_REALTIME); with `reason` not empty, of that reason only.
bool hasDumpOf(const std::string& dir, int pid, int64_t since_ns, const std::string& reason = "");
// True when `dir` holds the black box (HOST.PID.bbox) of process `pid`: it is recording.
bool hasBlackBoxOf(const std::string& dir, int pid);
// The recording of process `pid` to send to another node: its newest dump written at or after
// `since_ns`, else its black box; "" when it has neither.
std::string recordingToSend(const std::string& dir, int pid, int64_t since_ns);

// Loads the recordings in input.dump_dir (and the nodes' directories) and builds report.json's
// document with the analyzer's verdict (analyzer::verdictJson); prints it to `out` (the verdict
// or, without one, a per-rank table); writes it to input.dump_dir/input.file_name and returns its
// path. Fails (one line) only when report.json cannot be written; a directory without recordings
// still gets a report that says so. With a live detection (stall_began_ns or detected_ns), the
// report's "timeline" says when the stall began, when it was detected and when the verdict was
// printed (seconds after the stall began), and the text says the same in one line. Called by the
// agent's supervision (agent_supervise.cc) and by ncclrec-watch.
base::StatusOr<std::string> writeHangReport(const HangReportInput& input, std::ostream& out);

}  // namespace ncclrec::report
