#include "recorder/watchdog.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "format/bbox_ring.h"
#include "format/recording_files.h"
#include "recorder/clock.h"
#include "recorder/cuda_completion.h"
#include "recorder/dump_client.h"
#include "recorder/log.h"
#include "recorder/recorder.h"
#include "recorder/signals.h"

namespace ncclrec::recorder {
namespace {

using format::atomicField;
using format::DumpReason;
using format::EventState;

bool incomplete(uint8_t state) {
  return state == static_cast<uint8_t>(EventState::kEnqueued) ||
         state == static_cast<uint8_t>(EventState::kStarted);
}

// Updates a black-box slot as CUDA markers complete.
class SlotSink : public CudaCompletion::Sink {
 public:
  explicit SlotSink(format::BboxHeader* h) : h_(h) {}
  void started(uint64_t index, int64_t now_ns) override {
    format::Event* e = slot(index);
    if (e == nullptr) return;
    atomicField(e->start_ns).store(now_ns, std::memory_order_relaxed);
    uint8_t expected = static_cast<uint8_t>(EventState::kEnqueued);
    atomicField(e->state).compare_exchange_strong(
        expected, static_cast<uint8_t>(EventState::kStarted), std::memory_order_release);
  }
  void completed(uint64_t index, int64_t now_ns) override {
    format::Event* e = slot(index);
    if (e == nullptr) return;
    if (atomicField(e->start_ns).load(std::memory_order_relaxed) == 0)
      atomicField(e->start_ns).store(now_ns, std::memory_order_relaxed);
    atomicField(e->end_ns).store(now_ns, std::memory_order_relaxed);
    atomicField(e->state).store(static_cast<uint8_t>(EventState::kCompleted),
                                std::memory_order_release);
  }
  void captured(uint64_t index, int64_t now_ns) override {
    format::Event* e = slot(index);
    if (e == nullptr) return;
    atomicField(e->flags).fetch_or(format::kEventGraphCaptured, std::memory_order_relaxed);
    completed(index, now_ns);
  }
  // The driver failed on this op's markers (a sticky CUDA error): its fate is unknown, so it is
  // marked failed with the driver's code rather than left to look like a hang.
  void lost(uint64_t index, int cu_result, int64_t now_ns) override {
    format::Event* e = slot(index);
    if (e == nullptr) return;
    atomicField(e->end_ns).store(now_ns, std::memory_order_relaxed);
    atomicField(e->aux).store(cu_result, std::memory_order_relaxed);
    atomicField(e->state).store(static_cast<uint8_t>(EventState::kFailed),
                                std::memory_order_release);
  }

 private:
  format::Event* slot(uint64_t index) {
    format::Event* e = &format::ringSlots(h_)[index & (h_->ring_capacity - 1)];
    return format::slotHolds(e, index) ? e : nullptr;
  }
  format::BboxHeader* h_;
};

}  // namespace

Watchdog::Watchdog(Recorder* recorder) : recorder_(recorder) {}

Watchdog::~Watchdog() {
  stop();
  if (wake_fd_ >= 0) close(wake_fd_);
}

bool Watchdog::start(std::string* error) {
  trigger_path_ = recorder_->params().dir + "/" + std::string(format::kTriggerFileName);
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) {
    *error = std::string("eventfd: ") + strerror(errno);
    return false;
  }
  // A trigger file left by an earlier run in a reused directory must not make us dump.
  seen_trigger_ = format::FileStamp::of(trigger_path_);
  WatchSpawnConfig watch;
  watch.watcher = recorder_->params().watcher;
  watch.dir = recorder_->params().dir;
  watch.run_id = recorder_->header()->run_id;
  watch.library_dir = libraryDirectory();
  std::string why;
  if (!watcher_.init(watch, &why) && !why.empty())
    NCCLREC_WARN(kLogWatchdog, "live detection off: %s; hangs are declared after NCCLREC_TIMEOUT",
                 why.c_str());
  snapshot_path_ = recorder_->params().dir + "/" + std::string(format::kSnapshotRequestFileName);
  seen_snapshot_request_ = format::FileStamp::of(snapshot_path_);
  // Returns once the thread runs our code: a fork() right after the first NCCL call then never
  // copies a thread that is still inside its runtime's start-up (ASan's allocates under a lock
  // its forked child would inherit taken, and hang on).
  try {
    thread_ = std::thread([this] { run(); });
    running_.wait(false, std::memory_order_acquire);
  } catch (const std::exception& e) {
    *error = std::string("cannot start the watchdog thread: ") + e.what();
    return false;
  }
  return true;
}

void Watchdog::stop() {
  if (stopping_.exchange(true)) return;
  const uint64_t one = 1;
  if (wake_fd_ >= 0) (void)!write(wake_fd_, &one, sizeof(one));
  if (thread_.joinable()) thread_.join();
}

void Watchdog::requestDump(DumpReason reason) {
  requests_.fetch_or(1u << static_cast<uint32_t>(reason), std::memory_order_relaxed);
  const uint64_t one = 1;
  if (wake_fd_ >= 0) (void)!write(wake_fd_, &one, sizeof(one));
}

void Watchdog::run() {
  pthread_setname_np(pthread_self(), "ncclrec-watch");
  // Signals meant for the application's threads are not ours to take.
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  running_.store(true, std::memory_order_release);
  running_.notify_all();
  const int poll_ms = recorder_->params().poll_ms;
  while (!stopping_.load(std::memory_order_relaxed)) {
    pollfd pfd{wake_fd_, POLLIN, 0};
    if (poll(&pfd, 1, poll_ms) > 0) {
      uint64_t drained = 0;
      (void)!read(wake_fd_, &drained, sizeof(drained));
    }
    if (stopping_.load(std::memory_order_relaxed)) break;
    pollOnce();
  }
}

void Watchdog::pollOnce() {
  format::BboxHeader* h = recorder_->header();
  const int64_t now = realtimeNs();
  atomicField(h->heartbeat_ns).store(now, std::memory_order_relaxed);
  if (CudaCompletion* cuda = recorder_->cuda()) {
    SlotSink sink(h);
    cuda->poll(sink);
  }
  if (takeSignalDumpRequest()) requests_.fetch_or(1u << static_cast<uint32_t>(DumpReason::kSignal));
  performRequestedDumps();
  checkHang(now);
  checkTrigger();
  watcher_.poll(now, oldest_incomplete_ns_);
  checkSnapshotRequest();
}

void Watchdog::performRequestedDumps() {
  const uint32_t requests = requests_.exchange(0, std::memory_order_relaxed);
  for (uint32_t r = 0; r < 32; ++r) {
    if ((requests & (1u << r)) == 0) continue;
    const auto reason = static_cast<DumpReason>(r);
    const char* detail = reason == DumpReason::kSignal      ? "dump signal received"
                         : reason == DumpReason::kNcclError ? "an NCCL call returned an error"
                                                            : "requested";
    recorder_->dumpNow(reason, detail);
  }
}

void Watchdog::checkHang(int64_t now) {
  format::BboxHeader* h = recorder_->header();
  const uint64_t written = atomicField(h->write_index).load(std::memory_order_acquire);
  const uint64_t capacity = h->ring_capacity;
  if (written > capacity && cursor_ < written - capacity) cursor_ = written - capacity;
  const int64_t timeout_ns = static_cast<int64_t>(recorder_->params().timeout_s * 1e9);
  bool advancing = true;
  oldest_incomplete_ns_ = 0;
  for (uint64_t i = cursor_; i < written; ++i) {
    format::Event ev;
    if (!format::readEvent(h, i, &ev)) {
      const format::Event* slot = &format::ringSlots(h)[i & (capacity - 1)];
      const uint64_t seq =
          atomicField(const_cast<uint64_t&>(slot->seq)).load(std::memory_order_acquire);
      if (seq < 2 * i + 2) break;      // still being written: a brand-new op, not a hang yet
      if (advancing) cursor_ = i + 1;  // overwritten by a newer event: lost
      continue;
    }
    if (!incomplete(ev.state)) {
      if (advancing) cursor_ = i + 1;
      continue;
    }
    if (advancing) oldest_incomplete_ns_ = ev.enqueue_ns;
    advancing = false;
    if (now - ev.enqueue_ns < timeout_ns) continue;
    if (hang_reported_index_ >= static_cast<int64_t>(i)) continue;
    hang_reported_index_ = static_cast<int64_t>(i);
    atomicField(h->hang_event_index).store(static_cast<int64_t>(i), std::memory_order_relaxed);
    char detail[256];
    snprintf(detail, sizeof(detail),
             "%s #%" PRIu64 " on comm %016" PRIx64 " (event %" PRIu64 ") incomplete for %.1f s",
             std::string(format::opName(static_cast<format::OpType>(ev.op))).c_str(), ev.op_seq,
             ev.comm_id, i, static_cast<double>(now - ev.enqueue_ns) / 1e9);
    NCCLREC_WARN(kLogWatchdog, "hang: %s (NCCLREC_TIMEOUT=%.1f s); dumping", detail,
                 recorder_->params().timeout_s);
    // Trigger first: the other ranks start dumping while this one symbolizes.
    writeTrigger(detail);
    recorder_->dumpNow(DumpReason::kHang, detail);
    break;  // one hang per poll; older ops were already reported
  }
}

void Watchdog::writeTrigger(const std::string& detail) {
  const format::BboxHeader* h = recorder_->header();
  format::TriggerFile trigger;
  trigger.run_id = h->run_id;
  trigger.host = h->host;
  trigger.pid = h->pid;
  trigger.rank = h->global_rank;
  trigger.reason = "hang";
  trigger.detail = detail;
  std::string error;
  if (!trigger.write(trigger_path_, &error)) {
    NCCLREC_WARN(kLogWatchdog, "trigger file: %s", error.c_str());
    return;
  }
  seen_trigger_ = format::FileStamp::of(trigger_path_);  // our own must not make us dump again
}

void Watchdog::checkTrigger() {
  const std::optional<format::FileStamp> stamp = format::FileStamp::of(trigger_path_);
  if (!stamp || stamp == seen_trigger_) return;
  seen_trigger_ = stamp;
  char text[512] = {};
  const int fd = open(trigger_path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    (void)!read(fd, text, sizeof(text) - 1);
    close(fd);
  }
  // A trigger of another run sharing the directory is not ours.
  if (!format::TriggerFile::parse(text).concerns(recorder_->header()->run_id)) return;
  std::string detail = "trigger file from another process: ";
  for (const char* p = text; *p != '\0'; ++p) detail += *p == '\n' ? ' ' : *p;
  NCCLREC_INFO(kLogWatchdog, "%s", detail.c_str());
  recorder_->dumpNow(DumpReason::kTrigger, detail);
}

// ncclrec-top's request: every rank of the run (or of any run) takes a thread snapshot into its
// black box, where the request's writer reads it; no dump file.
void Watchdog::checkSnapshotRequest() {
  const std::optional<format::FileStamp> stamp = format::FileStamp::of(snapshot_path_);
  if (!stamp || stamp == seen_snapshot_request_) return;
  seen_snapshot_request_ = stamp;
  char text[512] = {};
  const int fd = open(snapshot_path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  (void)!read(fd, text, sizeof(text) - 1);
  close(fd);
  const format::TriggerFile request = format::TriggerFile::parse(text);
  if (request.reason != format::kSnapshotReason || !request.concerns(recorder_->header()->run_id))
    return;
  recorder_->snapshotNow();
}

}  // namespace ncclrec::recorder
