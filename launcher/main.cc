// cxxrun: torchrun for C++ programs, with hang supervision. See docs/cxxrun.md.
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <exception>
#include <string>

#include "launcher/agent.h"
#include "launcher/options.h"
#include "launcher/worker_env.h"

namespace {

int run(int argc, char** argv) {
  using namespace ncclrec::launcher;
  const ParsedCommandLine parsed = parseCommandLine(argc, argv, visibleGpus());
  if (!parsed.options) {
    std::fprintf(parsed.exit_code == kExitOk ? stdout : stderr, "%s\n", parsed.message.c_str());
    return parsed.exit_code;
  }
  char exe[PATH_MAX] = {};
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  return runAgent(*parsed.options, n > 0 ? std::string(exe, static_cast<size_t>(n)) : argv[0]);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {  // out of memory and the like: one line, never a trace
    std::fprintf(stderr, "cxxrun: internal error: %s\n", e.what());
    return ncclrec::launcher::kExitUsage;
  }
}
