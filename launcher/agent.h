// The cxxrun agent of one node: starts the job's store, starts the worker group, forwards its
// output with [rankN]: prefixes, stops the group when a worker fails (fail-fast), restarts it up
// to --max-restarts, and supervises hangs: when a rank writes the trigger file in NCCLREC_DIR, or
// cxxrun gets SIGINT/SIGTERM, every rank is made to dump, a report is printed and written, and
// the job ends.
//
// Single-threaded apart from the store's thread: signals are taken through a signalfd, output and
// child exits through one poll() loop, so no handler ever runs arbitrary code.
#pragma once

#include <string>

#include "launcher/options.h"

namespace ncclrec::launcher {

// Runs the job to its end and returns cxxrun's exit code (options.h). `exe_path` is cxxrun's own
// path (/proc/self/exe), used to find hostnccl. Worker output goes to this process's stdout and
// stderr, cxxrun's own lines to stderr.
int runAgent(const Options& options, const std::string& exe_path);

}  // namespace ncclrec::launcher
