// ncclrec-top's command line (docs/top.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tui/view_state.h"

namespace ncclrec::tui {

// Exit codes, documented in docs/top.md and --help. Never renumber.
inline constexpr int kExitOk = 0;
inline constexpr int kExitNothingReadable = 1;  // --once: no rank could be read at all
inline constexpr int kExitUsage = 2;            // bad flag, no terminal, no token for --connect
inline constexpr int kExitHang = 3;             // --once: the frame shows the hang banner
// Ended by SIGINT/SIGTERM/SIGHUP: 128 + the signal number, with the terminal restored.

struct TopOptions {
  std::string dir;  // the directory (or cxxrun run tree) read; "" with --connect only
  std::vector<std::string> connect;  // cxxrun agents, host:port
  std::string token;                 // for --connect: --token-file's, else CXXRUN_TOKEN
  double interval_s = 0.5;
  double hang_after_s = 60;
  bool once = false;
  int width = 80;  // --once's frame
  int height = 24;
  Screen screen = Screen::kSummary;  // --once's screen
  int rank = -1;                     // --once --screen rank: which global rank (-1: the slowest)
  double bench_s = 0;                // --bench SECONDS
  std::vector<std::string> library_frames;  // Python library layers besides the defaults
};

struct ParsedTopCommandLine {
  std::optional<TopOptions> options;  // set when ncclrec-top should run
  int exit_code = kExitOk;            // when not: kExitOk after --help, else kExitUsage
  std::string message;                // help text, or one error line naming the flag
};

// Never throws. Reads NCCLREC_DIR (default directory), NCCLREC_TIMEOUT (default --hang-after)
// and CXXRUN_TOKEN from the environment; `terminal_width/height` are --once's default size
// (the terminal's, or 0 when stdout is not one: 80x24).
ParsedTopCommandLine parseTopCommandLine(int argc, const char* const* argv, int terminal_width = 0,
                                         int terminal_height = 0);

}  // namespace ncclrec::tui
