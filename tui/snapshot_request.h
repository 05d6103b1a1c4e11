// The 't' key of ncclrec-top: asks every rank recording into the directory shown for a fresh
// thread snapshot, through NCCLREC_DIR/ncclrec.snapshot (format::TriggerFile with reason
// "snapshot", recording_files.h). Each recorder's watchdog sees the file change at its next poll
// (NCCLREC_POLL_MS), takes the snapshot into its black box only, no dump file, and ncclrec-top
// reads it there at its next refresh.
#pragma once

#include <string>

#include "tui/snapshot.h"

namespace ncclrec::tui {

// Writes the request for the ranks of `snapshot.dir` (of their run, when they share one) and
// returns the line the status bar shows: what was asked, or why nothing could be.
std::string requestThreadSnapshots(const Snapshot& snapshot);

}  // namespace ncclrec::tui
