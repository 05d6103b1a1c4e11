// Loading recordings into the model (model.h): black boxes (*.bbox, live or left by a dead
// process) and protobuf dumps (*.ncclrec.pb). For tools only: these allocate, and report bad
// input as a Status whose message names the file ("x.bbox: truncated ..."), never by crashing.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "base/status.h"
#include "format/bbox_layout.h"
#include "format/model.h"
#include "format/recording_files.h"

namespace ncclrec::format {

// Parses a black box image of `size` bytes (a mapping of the file, or a copy). Every offset and
// size of the header is checked against `size` before use. Events are read with the ring
// protocol (bbox_ring.h) from max(0, write_index - ring_capacity) to write_index; a slot that is
// being written or was overwritten meanwhile is skipped and counted in events_lost, so a live
// file may be read while its process writes it. Stacks hold addresses only (symbolized = false),
// each frame with the module that contains it and its offset there.
base::StatusOr<RankData> parseBlackBox(const void* data, size_t size, std::string source_path);

// The header checks parseBlackBox makes before reading anything else: version, record sizes,
// ring capacity, alignment, and every table inside `size` bytes. For readers that keep a mapping
// open (ncclrec-top) and re-read it themselves. "PATH: why" on failure.
base::Status checkBlackBoxHeader(const BboxHeader& h, size_t size, const std::string& path);

// Names the Python frame `word` (isPythonFrameWord) of a black box whose header passed
// checkBlackBoxHeader: function = qualified name, file, line from the code record it points at.
// A record not published, not recorded (table full) or out of range gives "<unknown>" with
// line 0. Reads only inside the header's Python regions.
Frame pythonFrameOf(const BboxHeader& h, uint64_t word);

// The latest thread snapshot of a black box (its thread region, bbox_layout.h).
struct ThreadSnapshot {
  std::vector<ThreadState> threads;
  int64_t taken_ns = 0;  // BboxHeader::threads_ns
  DumpReason reason = DumpReason::kNone;
  int dumper_tid = 0;
};
// Copies the thread region of a black box whose header passed checkBlackBoxHeader, under its
// sequence word (a copy taken while the recorder rewrote it is retried, a few times). Native
// frames get the module of `modules` that holds them, Python frames their names (pythonFrameOf).
// False, leaving *out alone, when the file has no thread region, no snapshot was taken yet, or
// the region was being rewritten at every try.
bool readThreadSnapshot(const BboxHeader& h, const std::vector<Module>& modules,
                        ThreadSnapshot* out);
// Maps `path` read-only and parses it.
base::StatusOr<RankData> loadBlackBox(const std::string& path);

// Reads a framed dump (ncclrec.proto describes the framing). Rejects a file that is not one
// ("PATH: not an ncclrec dump (bad magic)") and one written by a newer major format version.
base::StatusOr<RankData> loadDump(const std::string& path);

// A black box or a dump, told apart by the file's magic, whatever its name.
base::StatusOr<RankData> loadFile(const std::string& path);

// A node of a multi-node job that node 0's launcher could no longer hear from when it reported
// (report.json's "nodes": "silent_s"): its ranks' recordings never reached node 0. A launcher's
// fact, given to the analyzer with the others (analyzer/launcher_facts.h).
struct SilentNode {
  int node = 0;
  std::string host;
  double silent_s = 0;     // since its agent's heartbeat last changed
  std::vector<int> ranks;  // the global ranks it ran
};

struct LoadedSet {
  std::vector<RankData> ranks;           // one per process, by global rank, then host, then pid
  std::vector<std::string> warnings;     // "PATH: why" for each file skipped inside a directory
  std::vector<SilentNode> silent_nodes;  // none unless a launcher's report said so
};

// Loads files and directories (every *.bbox and *.ncclrec.pb directly inside; not recursive).
// A named file that cannot be read is an error; an unreadable file found in a directory is a
// warning. Fails when nothing at all could be read.
//
// One process (same host and pid) may have left several files: its black box and dumps. Its
// newest dump (largest dump_ns) is preferred, except when the black box recorded more events
// (the process went on after dumping): then the black box is taken, with the dump's symbolized
// stacks for the stack ids both hold and the dump's reason, time and detail.
base::StatusOr<LoadedSet> loadPaths(const std::vector<std::string>& paths);

}  // namespace ncclrec::format
