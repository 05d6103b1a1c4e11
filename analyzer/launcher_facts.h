// What the launcher saw of the ranks' processes, given to the analyzer: a process killed by a
// signal no handler can catch (SIGKILL: the kernel's out-of-memory killer, a scheduler, a user's
// kill -9) leaves a black box with no mark, and when its peers dump quickly its heartbeat is not
// stale yet, so the recordings alone say "alive in host code". cxxrun reaped it and knows.
#pragma once

#include <string>
#include <vector>

#include "format/reader.h"

namespace ncclrec::analyzer {

struct WorkerEnd {
  int pid = 0;
  std::string host;  // "" matches a recording of that pid on any host
  int signal = 0;    // the signal that ended it
};

// Marks the ranks whose process ended by `signal` as crashed by it (RankData::fatal_signal), when
// their recording has no mark of its own (no exit mark, no fatal-signal mark) and holds no dump:
// a rank that wrote a dump was alive then, and a launcher stops ranks after their dumps.
void applyWorkerEnds(format::LoadedSet& set, const std::vector<WorkerEnd>& ends);

// The ends cxxrun wrote in `dir`/report.json (`ranks[]`: pid, host, "ended": "SIGKILL"), except
// those of workers it stopped itself ("stopped": true); empty when there is no such file or it is
// not cxxrun's report. Never fails: the facts are optional.
std::vector<WorkerEnd> workerEndsFromReport(const std::string& dir);

}  // namespace ncclrec::analyzer
