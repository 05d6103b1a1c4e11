// The default mode of ncclrec-analyze: load the recordings, diagnose, print the verdict.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "analyzer/diagnose.h"
#include "analyzer/report.h"
#include "base/status.h"
#include "format/reader.h"

namespace ncclrec::analyzer {

struct AnalyzeOptions {
  bool json = false;
  bool color = false;
  std::optional<std::string> run;    // keep only this run id
  std::optional<std::string> trace;  // also write a Chrome/Perfetto trace there
  DiagnoseOptions diagnose;
};

// Keeps the ranks of one run: `run` when given, else the only run present. Fails, naming the run
// ids found, when the set mixes runs and none was chosen, or when `run` is not among them.
base::Status selectRun(format::LoadedSet& set, const std::optional<std::string>& run);

// The first step of every mode: loads `paths`, prints each warning on `err` as "ncclrec-analyze:
// warning: ...", and, when `select` is set, keeps one run (selectRun with `run`). nullopt, with
// one line on `err`, when the recordings cannot be read or no run can be chosen.
std::optional<format::LoadedSet> loadRecordings(const std::vector<std::string>& paths, bool select,
                                                const std::optional<std::string>& run,
                                                std::ostream& err);

// Returns the exit code (exit_codes.h): the verdict's, or kExitBadInput with one line on `err`.
int runAnalyze(const std::vector<std::string>& paths, const AnalyzeOptions& options,
               std::ostream& out, std::ostream& err);

// --stacks: every rank's threads (whereabouts.h printStacks). kExitOk, or kExitBadInput with one
// line on `err`.
int runStacks(const std::vector<std::string>& paths, const std::optional<std::string>& run,
              const std::vector<std::string>& library_frames, std::ostream& out, std::ostream& err);

}  // namespace ncclrec::analyzer
