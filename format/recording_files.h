// The dump directory (NCCLREC_DIR) is a contract between processes: the recorder in every rank
// writes black boxes, dumps and the job-wide trigger file; cxxrun, ncclrec-top and the analyzer
// find and read them. This header is that contract's one definition, used by both sides.
//
//   HOST.PID[-K].bbox                    a rank's black box (K: 1..99 when the name was taken)
//   HOST.PID[-K].N.REASON.ncclrec.pb     its Nth dump (REASON: dumpReasonName), N from 1
//   ncclrec.trigger                      "every rank of run R: dump now" (TriggerFile)
//   ncclrec.snapshot                     "every rank of run R: take a thread snapshot into your
//                                        black box, no dump" (TriggerFile, reason "snapshot")
//
// HOST may hold dots, so names are parsed from their end. Called from the recorder's init, dump
// and watchdog paths (never per NCCL call: these allocate) and from the tools.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ncclrec::format {

inline constexpr std::string_view kBboxSuffix = ".bbox";
inline constexpr std::string_view kDumpSuffix = ".ncclrec.pb";
inline constexpr std::string_view kTriggerFileName = "ncclrec.trigger";
// ncclrec-top's request for fresh thread snapshots. A file of its own, not the trigger file:
// cxxrun takes any new trigger file for a hang (and stops the job), and a request written over a
// rank's hang trigger before every rank read it would cost them their hang dump.
inline constexpr std::string_view kSnapshotRequestFileName = "ncclrec.snapshot";
inline constexpr std::string_view kSnapshotReason = "snapshot";
// Held (flock) by the one ncclrec-watch of a directory; a stalled rank starts none while it is.
inline constexpr std::string_view kWatchLockFileName = "ncclrec.watch.lock";

// The name of one recording: a black box, or one of its dumps (dump_seq > 0).
struct RecordingName {
  std::string host;
  int pid = 0;
  int instance = 0;       // K of "PID-K"; 0 when the plain name was free
  uint32_t dump_seq = 0;  // N of a dump (the recorder counts from 1)
  std::string reason;     // REASON of a dump; "" for a black box

  bool isDump() const { return !reason.empty(); }
  // The file name (no directory) this describes.
  std::string fileName() const;
  // The name of this black box's dump number `seq`, written for `reason`.
  RecordingName dump(uint32_t seq, std::string_view reason) const;
  // nullopt for any name that is not a black box or dump of this grammar.
  static std::optional<RecordingName> parse(std::string_view file_name);
};

// What makes a file "changed since last seen": its modification time and inode (a rename over it
// changes the inode even within one mtime tick).
struct FileStamp {
  int64_t mtime_ns = 0;
  uint64_t inode = 0;
  bool operator==(const FileStamp&) const = default;
  // nullopt when `path` cannot be stat'ed.
  static std::optional<FileStamp> of(const std::string& path);
};

// The trigger file: key=value lines. The recorder's watchdog writes one when its rank hangs (rank
// >= 0, reason "hang"); cxxrun writes one (rank -1) when interrupted or told of a hang elsewhere.
// Every rank of `run_id` (or of any run, when run_id is empty) dumps with reason "trigger".
struct TriggerFile {
  std::string run_id;
  std::string host;
  int pid = 0;
  int rank = -1;
  bool has_rank = false;  // parse(): whether a well-formed rank= line was read
  std::string reason;     // "hang", "interrupt", ...
  std::string detail;     // one line: newlines are written as spaces

  std::string text() const;
  // Reads the keys it knows, in any order; other lines are ignored. Never fails: a field that is
  // missing or malformed keeps its default.
  static TriggerFile parse(std::string_view text);
  // Whether a trigger with this text concerns run `run_id` (an empty id on either side: yes).
  bool concerns(std::string_view run_id) const;
  // Writes `text()` to `path` atomically (a temporary beside it, then rename), so a reader never
  // sees half a file. On failure returns false and says why in `error`.
  bool write(const std::string& path, std::string* error) const;
};

// Asks the ranks recording into `dir` (those of run `run_id`; empty: every run) for a thread
// snapshot without a dump: writes DIR/ncclrec.snapshot (reason kSnapshotReason, this host and
// pid, `detail`). ncclrec-top's 't' key writes it in the directory it reads, cxxrun's agent in
// its attempt directory when a remote ncclrec-top asks. The file's path, or "" with `error` set.
std::string writeSnapshotRequest(const std::string& dir, const std::string& run_id,
                                 const std::string& detail, std::string* error);

}  // namespace ncclrec::format
