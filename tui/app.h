// ncclrec-top's three ways to run, given parsed options (options.h): interactive (a collector
// thread builds snapshots, the main thread owns the terminal, handles keys and draws), --once
// (one frame as plain text) and --bench (collect and draw for a while, then print the rate and
// CPU use).
#pragma once

#include <cstdint>
#include <ostream>

#include "tui/options.h"

namespace ncclrec::tui {

// Runs ncclrec-top and returns its exit code (options.h). Frames of --once and the figures of
// --bench go to `out`, errors to `err`.
int runTop(const TopOptions& options, std::ostream& out, std::ostream& err);

}  // namespace ncclrec::tui
