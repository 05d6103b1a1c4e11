// ncclrec-watch: live hang detection on the black boxes of a directory, for jobs cxxrun does not
// launch (torchrun, mpirun, srun). A rank whose own op stalls starts it (recorder/watch_spawn.h);
// one watcher per directory, the holder of DIR/ncclrec.watch.lock. Every interval it reads the
// black boxes (live::Collector) and runs the detector (live/detector.h): warnings and resumptions
// are printed on stderr; at a hang it writes the trigger file so that every rank dumps, waits for
// the dumps (NCCLREC_DUMP_WAIT), and prints the verdict and report.json's path
// (report/hang_report.h) on the stderr it shares with the rank, which the launcher forwards to the
// user.
//
// It watches until every rank it saw ended, or nothing stalled for --linger seconds; after a
// verdict it stays (holding the lock) while that stall lasts, so that the ranks still stalled do
// not start another watcher that would report the same hang again.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>

#include "live/collector.h"
#include "live/detector.h"

namespace ncclrec::watch {

// Exit codes of ncclrec-watch (docs/launchers.md).
inline constexpr int kWatchDone = 0;    // the job ended, no stall for --linger, or another watches
inline constexpr int kWatchFailed = 1;  // report.json could not be written, the lock not opened
inline constexpr int kWatchUsage = 2;   // bad flags

struct WatchOptions {
  std::string dir;
  std::string run_id;  // "" = every run in dir
  double interval_s = 0.5;
  double linger_s = 60;
  double dump_wait_s = 10;  // NCCLREC_DUMP_WAIT
  // --ended HOW: the job has ended ("exit code 1", "SIGINT"); write the report once and leave
  // (writeEndReport). "" = watch live.
  std::string ended;
};

class Watcher {
 public:
  enum class State { kWatching, kHang, kEnded, kLingered };

  Watcher(WatchOptions options, live::DetectorParams params, std::ostream& err);

  // One look at the directory at `now_ns` (CLOCK_REALTIME): prints the detector's warnings and
  // resumptions; kHang once per stall (hang() is its event), kEnded when every rank seen ended,
  // kLingered when nothing stalled for --linger seconds.
  State step(int64_t now_ns);
  const live::DetectorEvent& hang() const { return hang_; }

  // After kHang: the trigger file, the wait for the dumps of the ranks alive (up to
  // dump_wait_s, `sleep` waits between looks), the report on err. kWatchFailed when report.json
  // cannot be written.
  int report(int64_t detected_ns, const std::function<void(double)>& sleep);

 private:
  bool allDumped(int64_t since_ns) const;
  void sayIfNotShared(const live::Snapshot& s);

  WatchOptions options_;
  live::Detector detector_;
  std::ostream& err_;
  live::Collector collector_;
  std::string host_;
  std::shared_ptr<const live::Snapshot> last_;
  std::map<std::pair<std::string, int>, live::RankEntry> seen_;  // by host and pid
  live::DetectorEvent hang_;
  int64_t started_ns_ = 0;
  int64_t last_stall_ns_ = 0;  // the last time some rank had an op incomplete for 1 s
  bool said_not_shared_ = false;
};

// ncclrec-watch's command line. options is empty when the program is to print `message` and exit
// with `exit_code` (--help, --version on stdout with 0; bad usage on stderr with kWatchUsage).
struct ParsedWatchCommandLine {
  std::optional<WatchOptions> options;
  bool daemonize = false;  // --daemonize: detach (the rank that starts it reaps the first process)
  int exit_code = kWatchDone;
  std::string message;
};
ParsedWatchCommandLine parseWatchCommandLine(int argc, const char* const* argv);

// ncclrec-watch after its flags: the lock, then step() every interval until the job ends or it
// lingered; `err` is stderr. Returns the exit code.
int runWatcher(const WatchOptions& options, std::ostream& err);

// ncclrec-watch --ended HOW: the report of a job that has ended and that no live detection
// reported on (`ncclrec run` asks for it at the end): one look at the directory's black boxes
// and dumps, the analyzer's verdict on `out` and report.json beside them, with reason "ended"
// and `ended` = options.ended. No trigger, no wait, no lock. kWatchFailed (one line on `err`)
// when report.json cannot be written.
int writeEndReport(const WatchOptions& options, std::ostream& out, std::ostream& err);

}  // namespace ncclrec::watch
