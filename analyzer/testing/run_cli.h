// Runs ncclrec-analyze's command line in-process for tests: the arguments after the program name,
// its exit code and what it printed on each stream.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "analyzer/cli.h"

namespace ncclrec::analyzer::testing {

struct CliResult {
  int code;
  std::string out, err;
};

inline CliResult runAnalyzeCli(std::vector<std::string> args) {
  args.insert(args.begin(), "ncclrec-analyze");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  const int code = runCli(static_cast<int>(argv.size()), argv.data(), out, err);
  return {code, out.str(), err.str()};
}

}  // namespace ncclrec::analyzer::testing
