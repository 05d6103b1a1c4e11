// ncclrec-exporter: the metrics of a node's live black boxes for jobs cxxrun does not launch
// (torchrun, srun, mpirun): one per node, reading the directory the ranks record into, as
// ncclrec-top reads it. See docs/metrics.md.
#pragma once

#include <optional>
#include <ostream>
#include <string>

#include "metrics/serve.h"

namespace ncclrec::metrics {

// Exit codes of ncclrec-exporter (docs/metrics.md).
inline constexpr int kExporterDone = 0;    // stopped by SIGINT/SIGTERM, or --once printed
inline constexpr int kExporterFailed = 1;  // the endpoint or the text file cannot be served
inline constexpr int kExporterUsage = 2;   // bad flags or knobs

struct ExporterCommand {
  ExporterOptions exporter;
  ServeConfig serve;
  bool once = false;  // print the metrics on stdout once and exit
};

struct ParsedExporterCommandLine {
  std::optional<ExporterCommand> command;  // empty: print `message`, exit with `exit_code`
  int exit_code = kExporterDone;
  std::string message;
};
// Flags over the NCCLREC_METRICS_* knobs; never throws.
ParsedExporterCommandLine parseExporterCommandLine(int argc, const char* const* argv);

// Serves `command` until SIGINT or SIGTERM (blocked here, before any thread starts, and waited
// for); with --once prints the metrics on `out`. Returns the exit code; errors go to `err`.
int runExporter(const ExporterCommand& command, std::ostream& out, std::ostream& err);

}  // namespace ncclrec::metrics
