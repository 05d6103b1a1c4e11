#include "analyzer/analyze_mode.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "analyzer/creation.h"
#include "analyzer/exit_codes.h"
#include "analyzer/launcher_facts.h"
#include "analyzer/trace.h"
#include "analyzer/whereabouts.h"

namespace ncclrec::analyzer {

base::Status selectRun(format::LoadedSet& set, const std::optional<std::string>& run) {
  std::set<std::string> runs;
  for (const format::RankData& r : set.ranks) runs.insert(r.run_id);
  const auto list = [&] {
    std::string s;
    for (const std::string& id : runs) s += (s.empty() ? "" : ", ") + (id.empty() ? "''" : id);
    return s;
  };
  if (run) {
    if (!runs.contains(*run)) {
      return base::Status::error("--run " + *run + ": no recording of that run (runs: " + list() +
                                 ")");
    }
    std::erase_if(set.ranks, [&](const format::RankData& r) { return r.run_id != *run; });
    return base::okStatus();
  }
  if (runs.size() > 1) {
    return base::Status::error("the recordings hold several runs (" + list() +
                               "): pick one with --run ID");
  }
  return base::okStatus();
}

namespace {
constexpr std::string_view kTool = "ncclrec-analyze: ";
}  // namespace

std::optional<format::LoadedSet> loadRecordings(const std::vector<std::string>& paths, bool select,
                                                const std::optional<std::string>& run,
                                                std::ostream& err) {
  base::StatusOr<format::LoadedSet> set = format::loadPaths(paths);
  if (!set.ok()) {
    err << kTool << set.status().message() << '\n';
    return std::nullopt;
  }
  for (const std::string& w : set->warnings) err << kTool << "warning: " << w << '\n';
  if (select) {
    if (const base::Status st = selectRun(*set, run); !st.ok()) {
      err << kTool << st.message() << '\n';
      return std::nullopt;
    }
  }
  return std::move(*set);
}

int runAnalyze(const std::vector<std::string>& paths, const AnalyzeOptions& options,
               std::ostream& out, std::ostream& err) {
  std::optional<format::LoadedSet> set = loadRecordings(paths, true, options.run, err);
  if (!set) return kExitBadInput;
  // Two processes of one run that claim one rank while they create a communicator are the bug
  // itself (a wrong RANK), which the verdict names; otherwise, mixed recordings.
  std::map<int, std::vector<const format::RankData*>> by_rank;
  for (const format::RankData& r : set->ranks) {
    if (r.global_rank >= 0) by_rank[r.global_rank].push_back(&r);
  }
  for (const auto& [rank, procs] : by_rank) {
    if (procs.size() < 2) continue;
    const bool creating = std::all_of(procs.begin(), procs.end(),
                                      [](const format::RankData* r) { return joiningById(*r); });
    if (creating) continue;
    err << kTool << "rank " << rank << " is recorded by two processes (" << procs[1]->source_path
        << " and another): mixed runs? pick one with --run ID\n";
    return kExitBadInput;
  }
  // A directory cxxrun reported on holds what it saw of the processes (killed by SIGKILL...) and,
  // on node 0 of a multi-node job, of the nodes it could no longer hear from.
  for (const std::string& path : paths) {
    applyWorkerFacts(*set, workerFactsFromReport(path));
    for (format::SilentNode& n : silentNodesFromReport(path))
      set->silent_nodes.push_back(std::move(n));
  }
  const CallSites sites(set->ranks, options.diagnose.library_frames);
  const Verdict v = diagnose(*set, options.diagnose, sites);
  if (options.trace) {
    std::ofstream file(*options.trace, std::ios::trunc);
    if (file) writeTrace(*set, v, sites.rule(), file);
    if (!file) {
      err << kTool << "--trace " << *options.trace << ": cannot write the file\n";
      return kExitBadInput;
    }
  }
  if (options.json) {
    printVerdictJson(v, set->warnings, out);
  } else {
    printVerdictText(v, ReportOptions{options.color}, out);
  }
  return exitCodeFor(v.cls);
}

int runStacks(const std::vector<std::string>& paths, const std::optional<std::string>& run,
              const std::vector<std::string>& library_frames, std::ostream& out,
              std::ostream& err) {
  std::optional<format::LoadedSet> set = loadRecordings(paths, true, run, err);
  if (!set) return kExitBadInput;
  const CallSites sites(set->ranks, library_frames);
  printStacks(*set, sites, out);
  return kExitOk;
}

}  // namespace ncclrec::analyzer
