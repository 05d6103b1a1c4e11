// The ncclrec-analyze command line, as a function so tests drive it without a process.
#pragma once

#include <ostream>

namespace ncclrec::analyzer {

// Parses argv (argv[0] is the program name) and runs the chosen mode; writes results to `out`,
// diagnostics to `err`. Returns the exit code (exit_codes.h). Never throws.
int runCli(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace ncclrec::analyzer
