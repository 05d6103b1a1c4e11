#include "tui/options.h"

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <fstream>

#include "base/cli_parse.h"
#include "format/params_table.h"
#include "format/version.h"

namespace ncclrec::tui {
namespace {

constexpr const char* kFooter =
    R"(Keys: arrows, PgUp/PgDn, Home/End, Enter (rank detail), Esc/Backspace (back),
Tab or 1 2 3 (screens), / (filter), s (sort), ? (help), q (quit).

Exit codes:
  0  quit with q, or --once printed a frame
  1  --once: no rank could be read (the reasons on stderr)
  2  bad usage, no terminal (use --once), --connect without a token
  3  --once: the frame shows the hang banner
  128+N  ended by signal N (SIGINT, SIGTERM, SIGHUP); the terminal is restored)";

std::string envOr(const char* name, std::string fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

std::string paramDefault(std::string_view name) {
  const format::ParamSpec* p = format::findParam(name);
  return p != nullptr ? std::string(p->default_value) : "";
}

// The token in FILE: its "token=" line (cxxrun's ncclrec-top endpoint file), else its first line.
std::optional<std::string> readToken(const std::string& path, std::string* why) {
  std::ifstream in(path);
  if (!in) {
    *why = "--token-file " + path + ": cannot read it";
    return std::nullopt;
  }
  std::string line, first;
  while (std::getline(in, line)) {
    if (line.rfind("token=", 0) == 0) return line.substr(6);
    if (first.empty()) first = line;
  }
  if (first.empty()) {
    *why = "--token-file " + path + ": empty";
    return std::nullopt;
  }
  return first;
}

ParsedTopCommandLine usage(std::string message) {
  ParsedTopCommandLine p;
  p.exit_code = kExitUsage;
  p.message = "ncclrec-top: " + std::move(message);
  return p;
}

}  // namespace

ParsedTopCommandLine parseTopCommandLine(int argc, const char* const* argv, int terminal_width,
                                         int terminal_height) {
  TopOptions o;
  std::string dir;
  std::string token_file;
  std::string screen = "summary";
  std::string size;
  double hang_after = -1;
  CLI::App app("ncclrec-top: a live view of every rank of an NCCL job recorded by libncclrec.so",
               "ncclrec-top");
  app.footer(kFooter);
  app.add_option("DIR", dir,
                 "Black boxes to read (default NCCLREC_DIR, else ./ncclrec-dumps); a cxxrun run "
                 "tree is followed to its newest run and attempt");
  app.add_option("--connect", o.connect,
                 "A cxxrun agent serving ncclrec-top (HOST:PORT, printed by cxxrun); repeat for "
                 "several; the job's other agents are found through it")
      ->type_name("HOST:PORT");
  app.add_option("--token-file", token_file,
                 "File holding the job token for --connect (default: CXXRUN_TOKEN)")
      ->type_name("FILE");
  app.add_option("--interval", o.interval_s, "Seconds between refreshes (default 0.5)")
      ->check(CLI::Range(0.05, 3600.0))
      ->type_name("SECONDS");
  app.add_option("--hang-after", hang_after,
                 "Seconds without progress, with an op incomplete, before the hang banner "
                 "(default NCCLREC_TIMEOUT, else its default " +
                     paramDefault("NCCLREC_TIMEOUT") + ")")
      ->check(CLI::Range(0.0, 1e9))
      ->type_name("SECONDS");
  app.add_flag("--once", o.once, "Print one frame as plain text to stdout and exit");
  app.add_option("--size", size, "--once: frame size (default the terminal's, else 80x24)")
      ->type_name("WxH");
  app.add_option("--screen", screen, "--once: summary, comms or rank (default summary)")
      ->check(CLI::IsMember({"summary", "comms", "rank"}));
  app.add_option("--rank", o.rank, "--once --screen rank: the global rank (default the slowest)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--bench", o.bench_s,
                 "Collect and draw without a terminal for SECONDS, then print the refresh rate "
                 "and CPU use (tests/bench/run_top_bench.sh)")
      ->check(CLI::Range(0.1, 3600.0))
      ->type_name("SECONDS");
  app.add_option("--library-frames", o.library_frames,
                 "Python library layers the call site skips, besides torch/distributed/ and the "
                 "other defaults (as ncclrec-analyze's): substrings of a frame's file path, "
                 "comma-separated; repeatable")
      ->type_name("PAT[,PAT...]")
      ->delimiter(',')
      ->allow_extra_args(false);
  app.set_version_flag("--version", std::string("ncclrec-top ") + format::versionString());
  const base::CliOutcome parsed = base::parseCli(app, argc, argv);
  if (parsed.failed()) return usage(parsed.text);
  if (parsed.done()) {
    ParsedTopCommandLine p;
    p.message = parsed.text;
    return p;
  }

  o.dir = !dir.empty() ? dir : !o.connect.empty() ? "" : format::paramValue("NCCLREC_DIR");
  if (hang_after >= 0) {
    o.hang_after_s = hang_after;
  } else {
    const std::string v = format::paramValue("NCCLREC_TIMEOUT");
    char* end = nullptr;
    const double d = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || !(d >= 0)) {
      return usage("NCCLREC_TIMEOUT='" + v + "' is not a number of seconds; set it or pass " +
                   "--hang-after");
    }
    o.hang_after_s = d;
  }
  o.screen = screen == "comms"  ? Screen::kComms
             : screen == "rank" ? Screen::kRank
                                : Screen::kSummary;
  o.width = terminal_width > 0 ? terminal_width : 80;
  o.height = terminal_height > 0 ? terminal_height : 24;
  if (!size.empty()) {
    int w = 0, h = 0;
    char x = 0, extra = 0;
    if (std::sscanf(size.c_str(), "%d%c%d%c", &w, &x, &h, &extra) != 3 || x != 'x' || w < 1 ||
        h < 1 || w > 10000 || h > 100000) {
      return usage("--size " + size + ": want WIDTHxHEIGHT, e.g. 80x24");
    }
    o.width = w;
    o.height = h;
  }
  if (!o.once && (!size.empty() || screen != "summary" || o.rank >= 0))
    return usage("--size, --screen and --rank go with --once");
  if (o.once && o.bench_s > 0) return usage("--once and --bench do not go together");
  for (const std::string& e : o.connect) {
    const size_t colon = e.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == e.size())
      return usage("--connect " + e + ": want HOST:PORT");
  }
  if (!o.connect.empty()) {
    std::string why;
    if (!token_file.empty()) {
      auto token = readToken(token_file, &why);
      if (!token) return usage(why);
      o.token = *token;
    } else {
      o.token = envOr("CXXRUN_TOKEN", "");
    }
    if (o.token.empty())
      return usage("--connect needs the job's token: set CXXRUN_TOKEN or pass --token-file");
  } else if (!token_file.empty()) {
    return usage("--token-file goes with --connect");
  }
  ParsedTopCommandLine p;
  p.options = std::move(o);
  return p;
}

}  // namespace ncclrec::tui
