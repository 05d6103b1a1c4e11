#include "analyzer/cli.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/analyze_mode.h"
#include "analyzer/events.h"
#include "analyzer/exit_codes.h"
#include "analyzer/params_print.h"
#include "base/cli_parse.h"
#include "format/version.h"

namespace ncclrec::analyzer {
namespace {

constexpr const char* kFooter = R"(Modes:
  (default)       the verdict: which ranks diverged, at which op and call site, and why
  --events        one header line per rank, then one line per recorded NCCL call
  --stacks        every rank's threads at its latest snapshot, identical stacks across ranks
                  printed once, the odd one out first
  --print-params  the NCCLREC_* environment variables, their types, defaults and meaning
PATH is a black box (*.bbox), a dump (*.ncclrec.pb), or a directory holding them.

Exit codes:
  0  no hang found (or, with --events/--stacks/--print-params, success)
  1  bad input or usage: unreadable or foreign file, bad flag, no PATH (one line on stderr)
  3  hang diagnosed: the verdict names it
  4  hang suspected but undecided: the output says what data is missing
)";

// A decimal integer, 0 or more, and nothing else.
std::optional<uint64_t> parseCount(const std::string& text) {
  uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

// The command line's values, and the options whose presence matters.
struct CliArgs {
  bool events = false;
  bool print_params = false;
  bool json = false;
  bool stacks = false;
  std::string rank, comm, last, run, trace;
  double stale_s = 2.0;
  std::vector<std::string> library_frames;
  std::vector<std::string> paths;
  CLI::Option* run_opt = nullptr;
  CLI::Option* trace_opt = nullptr;
  CLI::Option* rank_opt = nullptr;
  CLI::Option* comm_opt = nullptr;
  CLI::Option* last_opt = nullptr;
};

void defineOptions(CLI::App& app, CliArgs& a) {
  app.footer(kFooter);
  CLI::Option* events_opt = app.add_flag("--events", a.events, "List each rank's recorded events");
  CLI::Option* params_opt =
      app.add_flag("--print-params", a.print_params, "Print the NCCLREC_* parameter table");
  events_opt->excludes(params_opt);
  CLI::Option* stacks_opt =
      app.add_flag("--stacks", a.stacks, "Print every rank's threads, identical stacks collapsed");
  stacks_opt->excludes(events_opt);
  stacks_opt->excludes(params_opt);
  CLI::Option* json_opt = app.add_flag("--json", a.json, "Print JSON instead of text");
  stacks_opt->excludes(json_opt);
  a.run_opt =
      app.add_option("--run", a.run, "Analyze only this run id (when a directory holds several)")
          ->type_name("ID");
  a.trace_opt =
      app.add_option("--trace", a.trace, "Also write a Chrome/Perfetto trace (ui.perfetto.dev)")
          ->type_name("FILE");
  a.trace_opt->excludes(stacks_opt);
  for (CLI::Option* verdict_only : {a.trace_opt, a.run_opt}) {
    verdict_only->excludes(events_opt);
    verdict_only->excludes(params_opt);
  }
  app.add_option("--stale-heartbeat", a.stale_s,
                 "Seconds without a heartbeat after which a rank with no exit mark is dead")
      ->type_name("SECONDS")
      ->check(CLI::PositiveNumber);
  a.rank_opt =
      app.add_option("--rank", a.rank, "Only this global rank")->type_name("N")->needs(events_opt);
  a.comm_opt =
      app.add_option("--comm", a.comm, "Only this communicator (hex id, or its first digits)")
          ->type_name("ID")
          ->needs(events_opt);
  a.last_opt = app.add_option("--last", a.last, "Only the last N events of each rank")
                   ->type_name("N")
                   ->needs(events_opt);
  app.add_option("--library-frames", a.library_frames,
                 "Python library layers the call site skips, besides torch/distributed/ and the "
                 "other defaults: substrings of a frame's file path, comma-separated; repeatable")
      ->type_name("PAT[,PAT...]")
      ->delimiter(',')
      ->allow_extra_args(false)  // one value per occurrence: the PATHs after it are no patterns
      ->excludes(params_opt);
  app.add_option("PATH", a.paths, "Black boxes, dumps or directories holding them");
  app.set_version_flag("--version", std::string("ncclrec-analyze ") + format::versionString());
}

// The default mode: the verdict.
int runVerdictMode(const CliArgs& a, std::ostream& out, std::ostream& err) {
  if (a.paths.empty()) {
    err << "ncclrec-analyze: no PATH given: name the recordings to analyze (see --help)\n";
    return kExitBadInput;
  }
  AnalyzeOptions options;
  options.json = a.json;
  // Colors only on a terminal, and never when NO_COLOR is set (no-color.org).
  options.color =
      &out == &std::cout && isatty(STDOUT_FILENO) == 1 && std::getenv("NO_COLOR") == nullptr;
  if (a.run_opt->count() > 0) options.run = a.run;
  if (a.trace_opt->count() > 0) options.trace = a.trace;
  options.diagnose.stale_heartbeat_ns = static_cast<int64_t>(a.stale_s * 1e9);
  options.diagnose.library_frames = a.library_frames;
  return runAnalyze(a.paths, options, out, err);
}

int runEventsMode(const CliArgs& a, std::ostream& out, std::ostream& err) {
  if (a.paths.empty()) {
    err << "ncclrec-analyze: --events needs at least one PATH\n";
    return kExitBadInput;
  }
  EventsOptions options;
  options.json = a.json;
  options.library_frames = a.library_frames;
  if (a.rank_opt->count() > 0) {
    const std::optional<uint64_t> n = parseCount(a.rank);
    if (!n || *n > static_cast<uint64_t>(std::numeric_limits<int>::max())) {
      err << "ncclrec-analyze: --rank: '" << a.rank << "' is not a rank (an integer, 0 or more)\n";
      return kExitBadInput;
    }
    options.rank = static_cast<int>(*n);
  }
  if (a.comm_opt->count() > 0) options.comm = a.comm;
  if (a.last_opt->count() > 0) {
    options.last = parseCount(a.last);
    if (!options.last || *options.last == 0) {
      err << "ncclrec-analyze: --last: '" << a.last << "' is not a count (an integer, 1 or more)\n";
      return kExitBadInput;
    }
  }
  return runEvents(a.paths, options, out, err);
}

int runCliOrThrow(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app("ncclrec-analyze: read the black boxes and dumps of an NCCL job", "ncclrec-analyze");
  CliArgs a;
  defineOptions(app, a);
  const base::CliOutcome parsed = base::parseCli(app, argc, argv);
  if (parsed.failed()) {
    err << "ncclrec-analyze: " << parsed.text << '\n';
    return kExitBadInput;
  }
  if (parsed.kind == base::CliOutcome::Kind::kHelp) {
    out << parsed.text;
    return kExitOk;
  }
  if (parsed.kind == base::CliOutcome::Kind::kVersion) {
    out << parsed.text << '\n';
    return kExitOk;
  }
  if (a.print_params) {
    if (!a.paths.empty()) {
      err << "ncclrec-analyze: --print-params takes no PATH\n";
      return kExitBadInput;
    }
    printParams(a.json, out);
    return kExitOk;
  }
  if (a.stacks) {
    if (a.paths.empty()) {
      err << "ncclrec-analyze: --stacks needs at least one PATH\n";
      return kExitBadInput;
    }
    return runStacks(a.paths,
                     a.run_opt->count() > 0 ? std::optional<std::string>(a.run) : std::nullopt,
                     a.library_frames, out, err);
  }
  return a.events ? runEventsMode(a, out, err) : runVerdictMode(a, out, err);
}

}  // namespace

int runCli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  // A tool's contract is one line and an exit code, never a stack trace.
  try {
    return runCliOrThrow(argc, argv, out, err);
  } catch (const std::exception& e) {
    err << "ncclrec-analyze: internal error: " << e.what() << '\n';
  } catch (...) {
    err << "ncclrec-analyze: internal error\n";
  }
  return kExitBadInput;
}

}  // namespace ncclrec::analyzer
