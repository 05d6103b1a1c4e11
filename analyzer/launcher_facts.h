// What the launcher saw of the ranks' processes, given to the analyzer. A process killed by a
// signal no handler can catch (SIGKILL: the kernel's out-of-memory killer, a scheduler, a user's
// kill -9) leaves a black box with no mark, and when its peers dump quickly its heartbeat is not
// stale yet, so the recordings alone say "alive in host code": cxxrun reaped it and knows. A
// process that stopped running (SIGSTOP, a debugger, uninterruptible sleep) cannot dump and its
// black box stops changing: cxxrun and ncclrec-watch read its state from /proc. A node of a
// multi-node job that node 0 could no longer hear from left no recording there at all: cxxrun
// says which node, since when, and which ranks it ran.
#pragma once

#include <string>
#include <vector>

#include "format/reader.h"

namespace ncclrec::analyzer {

struct WorkerFacts {
  int pid = 0;
  std::string host;        // "" matches a recording of that pid on any host
  int signal = 0;          // the signal that ended it; 0 when it did not end by one
  char process_state = 0;  // still there: its proc(5) state letter (base/proc_state.h); 0: unknown
  std::string wchan;       // the kernel function it waited in
};

// For each worker, the recording of its process (pid, and host when given):
// - ended by `signal`: marked crashed by it (RankData::fatal_signal) when the recording has no
//   mark of its own (no exit mark, no fatal-signal mark) and holds no dump: a rank that wrote a
//   dump was alive then, and a launcher stops ranks after their dumps;
// - still there: its state and wait channel (RankData::process_state, process_wchan).
void applyWorkerFacts(format::LoadedSet& set, const std::vector<WorkerFacts>& workers);

// The facts cxxrun or ncclrec-watch wrote in `dir`/report.json (`ranks[]`: pid, host, "ended":
// "SIGKILL", "process_state", "wchan"), except the ends of workers it stopped itself ("stopped":
// true); empty when there is no such file or it is not such a report. Never fails: the facts are
// optional.
std::vector<WorkerFacts> workerFactsFromReport(const std::string& dir);

// The nodes node 0's report in `dir` says it could no longer hear from ("nodes": "silent_s"), each
// with the ranks the report lists on it; empty when there is no such report or none was silent.
// They go to LoadedSet::silent_nodes: a verdict can then name the node whose ranks node 0's ranks
// wait for (rules/node_unreachable.h).
std::vector<format::SilentNode> silentNodesFromReport(const std::string& dir);

}  // namespace ncclrec::analyzer
