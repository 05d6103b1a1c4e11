// ncclrec-top: a live view of every rank of an NCCL job. See docs/top.md.
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <iostream>

#include "tui/app.h"
#include "tui/options.h"

int main(int argc, char** argv) {
  using namespace ncclrec::tui;
  try {
    winsize ws{};
    const bool tty = isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0;
    const ParsedTopCommandLine parsed =
        parseTopCommandLine(argc, argv, tty ? ws.ws_col : 0, tty ? ws.ws_row : 0);
    if (!parsed.options) {
      std::fprintf(parsed.exit_code == kExitOk ? stdout : stderr, "%s\n", parsed.message.c_str());
      return parsed.exit_code;
    }
    return runTop(*parsed.options, std::cout, std::cerr);
  } catch (const std::exception& e) {  // out of memory and the like: one line, never a trace
    std::fprintf(stderr, "ncclrec-top: internal error: %s\n", e.what());
    return kExitUsage;
  }
}
