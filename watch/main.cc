// ncclrec-watch: live hang detection for jobs cxxrun does not launch. See docs/launchers.md.
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <iostream>

#include "watch/watcher.h"

int main(int argc, char** argv) {
  using namespace ncclrec::watch;
  try {
    const ParsedWatchCommandLine parsed = parseWatchCommandLine(argc, argv);
    if (!parsed.options) {
      std::fprintf(parsed.exit_code == kWatchDone ? stdout : stderr, "%s\n",
                   parsed.message.c_str());
      return parsed.exit_code;
    }
    if (!parsed.options->ended.empty())
      return writeEndReport(*parsed.options, std::cout, std::cerr);
    // Started by a rank: the first process exits at once (the rank reaps it), the watcher goes
    // on in its child, which is no child of the rank's.
    if (parsed.daemonize) {
      const pid_t pid = fork();
      if (pid < 0) {
        std::perror("ncclrec-watch: fork");
        return kWatchFailed;
      }
      if (pid > 0) _exit(kWatchDone);
    }
    return runWatcher(*parsed.options, std::cerr);
  } catch (const std::exception& e) {  // out of memory and the like: one line, never a trace
    std::fprintf(stderr, "ncclrec-watch: internal error: %s\n", e.what());
    return kWatchFailed;
  }
}
