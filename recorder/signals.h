// Signal handlers of the recorder. They only set flags and write to the black box with plain
// stores, async-signal-safely; all formatting happens on the watchdog thread.
//  - NCCLREC_DUMP_SIGNAL (default SIGUSR2): ask the watchdog for a dump. A previous handler that
//    was a function is chained.
//  - SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL: mark the black box (signal, time), then hand the
//    signal to the previous handler (or the default action), so the process dies as it would have.
#pragma once

#include "format/bbox_layout.h"

namespace ncclrec::recorder {

// Installs the handlers once per process image; later calls (a forked child's new recorder) only
// retarget them at the new black box and wake-up fd.
void installSignalHandlers(format::BboxHeader* header, int wake_fd, int dump_signal,
                           bool fatal_signals);
// In a forked child, before anything else: stop writing to the parent's black box.
void forgetSignalTargets();
// Watchdog: true once per dump-signal delivery since the last call.
bool takeSignalDumpRequest();

}  // namespace ncclrec::recorder
