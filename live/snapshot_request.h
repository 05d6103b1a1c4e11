// The 't' key of ncclrec-top: asks every rank recording into the directory shown for a fresh
// thread snapshot, through NCCLREC_DIR/ncclrec.snapshot (format::TriggerFile with reason
// "snapshot", recording_files.h). Each recorder's watchdog sees the file change at its next poll
// (NCCLREC_POLL_MS), takes the snapshot into its black box only, no dump file, and ncclrec-top
// reads it there at its next refresh. Through --connect, each agent writes the same file in its own
// attempt directory (launcher/top_server.cc, TopRequest.ask_snapshot).
#pragma once

#include <string>

#include "live/snapshot.h"

namespace ncclrec::live {

// Writes the request for the ranks of `snapshot.dir` (of their run, when they share one) and
// returns the line the status bar shows: what was asked, or why nothing could be. Ranks seen
// through cxxrun agents (--connect) are asked by their agents: `*ask_agents` says the collector
// is to pass the request on (Collector::askRemoteSnapshots) at its next refresh.
std::string requestThreadSnapshots(const Snapshot& snapshot, bool* ask_agents);

}  // namespace ncclrec::live
