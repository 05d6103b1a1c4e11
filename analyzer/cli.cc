#include "analyzer/cli.h"

#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdint>
#include <exception>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/events.h"
#include "analyzer/exit_codes.h"
#include "analyzer/params_print.h"

namespace ncclrec::analyzer {
namespace {

constexpr const char* kFooter = R"(Modes:
  --events        one header line per rank, then one line per recorded NCCL call
  --print-params  the NCCLREC_* environment variables, their types, defaults and meaning
PATH is a black box (*.bbox), a dump (*.ncclrec.pb), or a directory holding them.

Exit codes:
  0  success
  1  bad input or usage: unreadable or foreign file, bad flag, no mode (one line on stderr)
)";

// A decimal integer, 0 or more, and nothing else.
std::optional<uint64_t> parseCount(const std::string& text) {
  uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

int runCliOrThrow(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app("ncclrec-analyze: read the black boxes and dumps of an NCCL job", "ncclrec-analyze");
  app.footer(kFooter);
  bool events = false;
  bool print_params = false;
  bool json = false;
  std::string rank;
  std::string comm;
  std::string last;
  std::vector<std::string> paths;

  CLI::Option* events_opt = app.add_flag("--events", events, "List each rank's recorded events");
  CLI::Option* params_opt =
      app.add_flag("--print-params", print_params, "Print the NCCLREC_* parameter table");
  events_opt->excludes(params_opt);
  app.add_flag("--json", json, "Print JSON instead of text");
  CLI::Option* rank_opt =
      app.add_option("--rank", rank, "Only this global rank")->type_name("N")->needs(events_opt);
  CLI::Option* comm_opt =
      app.add_option("--comm", comm, "Only this communicator (hex id, or its first digits)")
          ->type_name("ID")
          ->needs(events_opt);
  CLI::Option* last_opt = app.add_option("--last", last, "Only the last N events of each rank")
                              ->type_name("N")
                              ->needs(events_opt);
  app.add_option("PATH", paths, "Black boxes, dumps or directories holding them");
#ifdef NCCLREC_VERSION
  app.set_version_flag("--version", NCCLREC_VERSION);
#endif

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return kExitOk;
  } catch (const CLI::CallForAllHelp&) {
    out << app.help("", CLI::AppFormatMode::All);
    return kExitOk;
  } catch (const CLI::CallForVersion& e) {
    out << e.what() << '\n';
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    err << "ncclrec-analyze: " << e.what() << '\n';
    return kExitBadInput;
  }

  if (print_params) {
    if (!paths.empty()) {
      err << "ncclrec-analyze: --print-params takes no PATH\n";
      return kExitBadInput;
    }
    printParams(json, out);
    return kExitOk;
  }
  if (!events) {
    err << "ncclrec-analyze: no mode given: use --events or --print-params\n";
    return kExitBadInput;
  }
  if (paths.empty()) {
    err << "ncclrec-analyze: --events needs at least one PATH\n";
    return kExitBadInput;
  }
  EventsOptions options;
  options.json = json;
  if (rank_opt->count() > 0) {
    const std::optional<uint64_t> n = parseCount(rank);
    if (!n || *n > static_cast<uint64_t>(std::numeric_limits<int>::max())) {
      err << "ncclrec-analyze: --rank: '" << rank << "' is not a rank (an integer, 0 or more)\n";
      return kExitBadInput;
    }
    options.rank = static_cast<int>(*n);
  }
  if (comm_opt->count() > 0) options.comm = comm;
  if (last_opt->count() > 0) {
    options.last = parseCount(last);
    if (!options.last || *options.last == 0) {
      err << "ncclrec-analyze: --last: '" << last << "' is not a count (an integer, 1 or more)\n";
      return kExitBadInput;
    }
  }
  return runEvents(paths, options, out, err);
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
