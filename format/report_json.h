// report.json, the job report cxxrun and ncclrec-watch write beside the dumps (report/): what
// other processes read back from it is defined here once. The writer (report/hang_report.cc)
// names these keys with the constants below; the readers — the analyzer (how the launcher saw
// each worker end, analyzer/launcher_facts.h) and the metrics (the verdict's class and ranks,
// metrics/report_file.h) — read it through parseReportJson(). The whole document is described
// in docs/cxxrun.md ("report.json").
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ncclrec::format::report_json {

// The job-wide report; another node of a multi-node job writes report.node<N>.json.
inline constexpr std::string_view kFileName = "report.json";
std::string nodeFileName(int node);
// True for "report.node<N>.json".
bool isNodeFileName(std::string_view name);

// Top-level keys read back.
inline constexpr const char* kRunId = "run_id";
inline constexpr const char* kAttempt = "attempt";
inline constexpr const char* kReason = "reason";    // "hang", "interrupt", "failure", "ended"
inline constexpr const char* kVerdict = "verdict";  // the analyzer's verdict object, or null
inline constexpr const char* kRanks = "ranks";      // one object per worker the launcher knew
// In "verdict" (the analyzer's JSON, docs/analyzer.md): its class and the ranks it names.
inline constexpr const char* kVerdictClass = "class";
inline constexpr const char* kVerdictRanks = "ranks";
// In each of "ranks".
inline constexpr const char* kRank = "rank";
inline constexpr const char* kPid = "pid";          // null for a rank of a node that sent nothing
inline constexpr const char* kHost = "host";        // multi-node reports only
inline constexpr const char* kEnded = "ended";      // "exit code 1", "SIGKILL": not running
inline constexpr const char* kStopped = "stopped";  // true: ended by the launcher's own signal
// What the OS said of a worker still running when the report was made (base/proc_state.h):
// "running", "sleeping", "uninterruptible", "stopped", "traced", "zombie"; absent when unknown.
inline constexpr const char* kProcessState = "process_state";
inline constexpr const char* kWchan = "wchan";  // the kernel function it waited in, or absent
inline constexpr const char* kNode = "node";    // multi-node reports only: the node that ran it
// Multi-node job-wide reports: one object per node.
inline constexpr const char* kNodes = "nodes";
// In each of "nodes": "node", "host", and, for a node node 0 could no longer hear from, the
// seconds since its agent's heartbeat last changed.
inline constexpr const char* kSilentS = "silent_s";

// A worker as the report lists it.
struct Worker {
  int rank = -1;
  int pid = 0;
  std::string host;   // "" when the report does not say (a single-node report)
  std::string ended;  // "" while it runs
  bool stopped = false;
  char process_state = 0;  // the proc(5) letter of kProcessState's word; 0 when absent
  std::string wchan;
  friend bool operator==(const Worker&, const Worker&) = default;
};

// A node as a multi-node report lists it.
struct Node {
  int node = 0;
  std::string host;
  double silent_s = 0;     // 0: heard from
  std::vector<int> ranks;  // the ranks "ranks" lists on it (with or without a recording)
  friend bool operator==(const Node&, const Node&) = default;
};

struct Document {
  std::string run_id;
  int attempt = 0;
  std::string reason;
  std::string verdict_class;    // "" when the report holds no verdict
  std::vector<int> culprits;    // the verdict's ranks, ascending, each once
  std::vector<Worker> workers;  // those with a pid, in the report's order
  std::vector<Node> nodes;      // multi-node reports, in the report's order
};

// report.json's text. nullopt, with one line in *problem, when it is not a JSON object. An empty
// `reason` is a list of ranks written before any hang or failure: a reader that wants a job's
// verdict checks it. Never throws and runs nothing from the text; a key of the wrong type counts as
// absent.
std::optional<Document> parseReportJson(std::string_view text, std::string* problem);

}  // namespace ncclrec::format::report_json
