// ncclrec-watch's command line (watcher.h).
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <cstdlib>

#include "base/cli_parse.h"
#include "format/params_table.h"
#include "format/version.h"
#include "watch/watcher.h"

namespace ncclrec::watch {
namespace {

constexpr const char* kFooter = R"(A rank recorded by libncclrec.so starts it when one of its NCCL
ops stays incomplete for a second (NCCLREC_WATCHER); one watcher per directory (the holder of
DIR/ncclrec.watch.lock). See docs/launchers.md, "Live detection without cxxrun".

Exit codes:
  0  the job ended, nothing stalled for --linger seconds, or another watcher holds the lock
     (a verdict printed on the way is not an error); with --ended, report.json was written
  1  the lock file cannot be opened, or report.json cannot be written
  2  bad usage)";

ParsedWatchCommandLine usage(const std::string& message) {
  ParsedWatchCommandLine p;
  p.exit_code = kWatchUsage;
  p.message = "ncclrec-watch: " + message;
  return p;
}

}  // namespace

ParsedWatchCommandLine parseWatchCommandLine(int argc, const char* const* argv) {
  WatchOptions o;
  bool daemonize = false;
  CLI::App app("ncclrec-watch: live hang detection on the black boxes of a directory",
               "ncclrec-watch");
  app.footer(kFooter);
  app.add_option("--dir", o.dir, "The job's NCCLREC_DIR")->required();
  app.add_option("--run-id", o.run_id, "Watch only the ranks of this run (default: every run)");
  app.add_option("--interval", o.interval_s, "Seconds between two looks (default 0.5)");
  app.add_option("--linger", o.linger_s,
                 "Exit after this many seconds without a stalled rank (default 60)");
  app.add_flag("--daemonize", daemonize, "Detach: fork, the first process exits at once");
  app.add_option("--ended", o.ended,
                 "The job has ended (HOW: 'exit code 1', 'SIGINT'): print the verdict on the "
                 "directory's recordings, write report.json (reason \"ended\") and exit");
  app.set_version_flag("--version", std::string("ncclrec-watch ") + format::versionString());
  const base::CliOutcome parsed = base::parseCli(app, argc, argv);
  if (parsed.failed()) return usage(parsed.text);
  if (parsed.done()) {
    ParsedWatchCommandLine p;
    p.message = parsed.text;
    return p;
  }
  struct stat st {};
  if (::stat(o.dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return usage("--dir " + o.dir + ": not a directory");
  if (!(o.interval_s > 0)) return usage("--interval must be a number of seconds > 0");
  if (!(o.linger_s >= 0)) return usage("--linger must be a number of seconds >= 0");
  if (app.count("--ended") > 0 && o.ended.empty())
    return usage("--ended needs how the job ended, e.g. --ended 'exit code 0'");
  if (!o.ended.empty() && daemonize) return usage("--ended and --daemonize do not go together");
  const std::string wait = format::paramValue("NCCLREC_DUMP_WAIT");
  char* end = nullptr;
  o.dump_wait_s = std::strtod(wait.c_str(), &end);
  if (wait.empty() || *end != '\0' || !(o.dump_wait_s >= 0))
    return usage("NCCLREC_DUMP_WAIT='" + wait + "' is not a number of seconds");
  ParsedWatchCommandLine p;
  p.options = o;
  p.daemonize = daemonize;
  return p;
}

}  // namespace ncclrec::watch
