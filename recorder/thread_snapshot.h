// Where every thread of the process is: at each dump, the dumping thread asks every other thread
// (/proc/self/task) for its stack with a real-time signal (NCCLREC_SNAPSHOT_SIGNAL), and each
// thread's handler writes its own Python frames and return addresses into preallocated slots
// (async-signal-safe: no allocation, no lock). The dumper waits until every thread answered or
// NCCLREC_SNAPSHOT_MS passed; a thread that did not answer (the signal blocked, the thread
// stopped) is recorded with its kernel state and wchan instead. The result goes into the black
// box's thread region (bbox_layout.h ThreadRecord), so the latest snapshot outlives the process,
// and from there into the dump.
//
// Nothing here is on the record path: the handler runs only when a snapshot asks for it.
#pragma once

#include <cstdint>

#include "format/bbox_layout.h"

namespace ncclrec::recorder {

class PythonFrames;

struct SnapshotOptions {
  int signal = 0;         // the real-time signal the threads answer
  int deadline_ms = 100;  // how long to wait for them
  int native_depth = 64;  // return addresses per thread
  int python_depth = 64;  // Python frames per thread (0 or no `python`: none)
  PythonFrames* python = nullptr;
};

// Installs the handler for options.signal (once per process image; later calls, such as a forked
// child's new recorder, only update the options). A handler the program had for that signal is
// chained for every delivery that is not a snapshot request. False when sigaction fails.
bool installSnapshotHandler(const SnapshotOptions& options);

// False in a ThreadSanitizer build: TSan defers an asynchronous signal until the thread next
// enters one of its interceptors, so a stack would be taken elsewhere, possibly after the snapshot
// (or the process) ended. installSnapshotHandler then installs nothing.
bool snapshotsSupported();

struct SnapshotResult {
  uint32_t threads = 0;    // records written
  uint32_t answered = 0;   // threads that captured their stack (the dumper included)
  int64_t elapsed_ns = 0;  // from the first signal sent to the last record written
};

// Takes a snapshot of every thread into `header`'s thread region (nothing when it has none or no
// handler is installed). Not async-signal-safe; callers serialize (Recorder::dumpNow's mutex).
// `reason` is the DumpReason the snapshot is taken for.
SnapshotResult takeThreadSnapshot(format::BboxHeader* header, uint32_t reason);

namespace detail {
// True when `signal` is set in the hex mask of a /proc/.../status line such as "SigBlk:\t...".
bool maskHasSignal(const char* hex_mask, int signal);
}  // namespace detail

}  // namespace ncclrec::recorder
