// The watchdog thread of one process: every NCCLREC_POLL_MS it stamps the heartbeat, polls CUDA
// completion markers, looks for the oldest incomplete op, declares a hang when that op is older
// than NCCLREC_TIMEOUT (dump + job-wide trigger file), dumps when another process wrote the
// trigger file, takes a thread snapshot (no dump) when ncclrec-top asks for one, performs the
// dumps other threads and signal handlers asked for, and starts the live hang detector
// ncclrec-watch when its own oldest op stalls (watch_spawn.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>

#include "format/op_type.h"
#include "format/recording_files.h"
#include "recorder/watch_spawn.h"

namespace ncclrec::recorder {

class Recorder;

class Watchdog {
 public:
  explicit Watchdog(Recorder* recorder);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  bool start(std::string* error);
  void stop();  // idempotent; joins the thread

  // Any thread: asks for a dump at the next wake-up (the thread is woken now).
  void requestDump(format::DumpReason reason);
  // The eventfd a signal handler writes to (async-signal-safe wake-up).
  int wakeFd() const { return wake_fd_; }

  // One poll, exposed for tests: heartbeat, completions, hang check, trigger check, requests.
  void pollOnce();
  // Writes the dumps asked for since the last poll, in the calling thread. The exit path calls it
  // after stop(), so that an error right before exit still leaves its dump.
  void performRequestedDumps();

 private:
  void run();
  void checkHang(int64_t now);
  void checkTrigger();
  void checkSnapshotRequest();
  void writeTrigger(const std::string& detail);

  Recorder* recorder_;
  // NCCLREC_DIR/ncclrec.trigger, built once: a poll allocates nothing, so a fork() in another
  // thread never catches the watchdog inside the allocator (a child of a sanitized program would
  // then deadlock on the allocator's lock at its first allocation or at exit).
  std::string trigger_path_;
  int wake_fd_ = -1;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> running_{false};   // set by the thread once it runs our code (start() waits)
  std::atomic<uint32_t> requests_{0};  // bit (1 << DumpReason)
  uint64_t cursor_ = 0;                // no incomplete event below this index
  int64_t oldest_incomplete_ns_ = 0;   // enqueue time of the oldest incomplete op, 0 when none
  WatchSpawner watcher_;               // starts ncclrec-watch on a stall (watch_spawn.h)
  int64_t hang_reported_index_ = -1;
  // The last trigger file seen (so an old file does not trigger again).
  std::optional<format::FileStamp> seen_trigger_;
  // NCCLREC_DIR/ncclrec.snapshot (ncclrec-top's request for a thread snapshot), and the last one
  // seen.
  std::string snapshot_path_;
  std::optional<format::FileStamp> seen_snapshot_request_;
};

}  // namespace ncclrec::recorder
