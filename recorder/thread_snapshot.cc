#include "recorder/thread_snapshot.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

#include "base/proc_state.h"
#include "format/bbox_ring.h"
#include "format/op_type.h"
#include "recorder/clock.h"
#include "recorder/python_frames.h"
#include "recorder/stacks.h"

namespace ncclrec::recorder {
namespace {

constexpr uint32_t kMaxSlots = 1024;

// Slot::word = (generation << 3) | state. Only the snapshot of that generation's dumper moves a
// slot out of kRequested (to kAbandoned), only the asked thread's handler to kCapturing and then
// kDone; a slot still kCapturing (a handler interrupted for longer than the deadline) is skipped
// by later snapshots until its handler finishes.
enum SlotState : uint64_t { kIdle = 0, kRequested = 1, kCapturing = 2, kDone = 3, kAbandoned = 4 };

struct Slot {
  std::atomic<uint64_t> word;
  std::atomic<int32_t> tid;
  uint32_t native_depth;
  uint32_t python_depth;
  uint64_t frames[format::kThreadMaxFrames];
};

// Static storage: the handler never allocates. Pages are touched only by snapshots.
Slot g_slots[kMaxSlots];
std::atomic<uint32_t> g_slot_count{0};
std::atomic<uint64_t> g_generation{0};
std::atomic<PythonFrames*> g_python{nullptr};
std::atomic<int> g_native_depth{0};
std::atomic<int> g_python_depth{0};
std::atomic<bool> g_python_enabled{true};
int g_signal = 0;
int g_deadline_ms = 100;
bool g_installed = false;
struct sigaction g_prev;

constexpr uint64_t word(uint64_t generation, SlotState state) { return (generation << 3) | state; }
constexpr SlotState stateOf(uint64_t w) { return static_cast<SlotState>(w & 7); }

void fillSlot(Slot& slot, void* ucontext) {
  int py = 0;
  PythonFrames* python = g_python.load(std::memory_order_acquire);
  if (python != nullptr && g_python_enabled.load(std::memory_order_relaxed)) {
    py = python->capture(slot.frames, g_python_depth.load(std::memory_order_relaxed));
  }
  const int room = static_cast<int>(format::kThreadMaxFrames) - py;
  const int native = captureInterruptedStack(
      ucontext, slot.frames + py, std::min(room, g_native_depth.load(std::memory_order_relaxed)));
  slot.python_depth = static_cast<uint32_t>(py);
  slot.native_depth = static_cast<uint32_t>(native);
}

void answer(void* ucontext) {
  const uint64_t generation = g_generation.load(std::memory_order_acquire);
  const uint32_t count = g_slot_count.load(std::memory_order_acquire);
  const auto tid = static_cast<int32_t>(syscall(SYS_gettid));
  for (uint32_t i = 0; i < count && i < kMaxSlots; ++i) {
    Slot& slot = g_slots[i];
    if (slot.tid.load(std::memory_order_relaxed) != tid) continue;
    uint64_t expected = word(generation, kRequested);
    if (!slot.word.compare_exchange_strong(expected, word(generation, kCapturing),
                                           std::memory_order_acq_rel)) {
      continue;  // an old slot of this thread, or this request was given up
    }
    fillSlot(slot, ucontext);
    slot.word.store(word(generation, kDone), std::memory_order_release);
    return;
  }
}

void onSnapshotSignal(int sig, siginfo_t* info, void* ucontext) {
  const int saved_errno = errno;
  if (info != nullptr && info->si_code == SI_QUEUE && info->si_pid == getpid() &&
      info->si_value.sival_ptr == static_cast<void*>(g_slots)) {
    answer(ucontext);
  } else if ((g_prev.sa_flags & SA_SIGINFO) != 0 && g_prev.sa_sigaction != nullptr) {
    g_prev.sa_sigaction(sig, info, ucontext);
  } else if ((g_prev.sa_flags & SA_SIGINFO) == 0 && g_prev.sa_handler == SIG_DFL) {
    // Someone else sent it and the program had no handler: die as it would have.
    sigaction(sig, &g_prev, nullptr);
    raise(sig);
  } else if ((g_prev.sa_flags & SA_SIGINFO) == 0 && g_prev.sa_handler != SIG_IGN &&
             g_prev.sa_handler != nullptr) {
    g_prev.sa_handler(sig);
  }
  errno = saved_errno;
}

std::vector<int> listThreads() {
  std::vector<int> tids;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return tids;
  while (const dirent* entry = readdir(dir)) {
    const int tid = atoi(entry->d_name);
    if (tid > 0) tids.push_back(tid);
  }
  closedir(dir);
  std::sort(tids.begin(), tids.end());
  return tids;
}

// Reads a small /proc file into `buf` (NUL-terminated); false when it cannot.
bool readProcFile(int tid, const char* name, char* buf, size_t size) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/self/task/%d/%s", tid, name);
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t n;
  do {
    n = read(fd, buf, size - 1);
  } while (n < 0 && errno == EINTR);
  close(fd);
  if (n < 0) return false;
  buf[n] = '\0';
  return true;
}

void describeFromProc(int tid, int signal, format::ThreadRecord* r) {
  char buf[2048];
  if (readProcFile(tid, "comm", buf, sizeof(buf))) {
    buf[strcspn(buf, "\n")] = '\0';
    snprintf(r->comm, sizeof(r->comm), "%.15s", buf);
  }
  if (readProcFile(tid, "stat", buf, sizeof(buf)))
    base::parseTaskStat(buf, &r->kernel_state, &r->cpu_ticks);
  if (readProcFile(tid, "wchan", buf, sizeof(buf)))
    snprintf(r->wchan, sizeof(r->wchan), "%.63s", buf);
  if (r->status == format::kThreadAnswered || r->status == format::kThreadDumper) return;
  if (readProcFile(tid, "status", buf, sizeof(buf))) {
    if (const char* blk = strstr(buf, "SigBlk:"); blk && detail::maskHasSignal(blk + 7, signal))
      r->flags |= format::kThreadSignalBlocked;
    if (const char* ign = strstr(buf, "SigIgn:"); ign && detail::maskHasSignal(ign + 7, signal))
      r->flags |= format::kThreadSignalIgnored;
  }
}

// Calls that fail with EINTR after a signal handler ran, whatever SA_RESTART says (signal(7)).
bool cutShortBySignals(long nr) {
  static constexpr long kCalls[] = {
#ifdef SYS_nanosleep
      SYS_nanosleep,
#endif
#ifdef SYS_select
      SYS_select,
#endif
#ifdef SYS_poll
      SYS_poll,
#endif
#ifdef SYS_epoll_wait
      SYS_epoll_wait,
#endif
#ifdef SYS_pause
      SYS_pause,
#endif
#ifdef SYS_epoll_pwait2
      SYS_epoll_pwait2,
#endif
      SYS_clock_nanosleep,
      SYS_pselect6,
      SYS_ppoll,
      SYS_epoll_pwait,
      SYS_io_getevents,
      SYS_semtimedop,
      SYS_rt_sigtimedwait,
      SYS_rt_sigsuspend,
      SYS_msgrcv,
      SYS_msgsnd};
  return std::find(std::begin(kCalls), std::end(kCalls), nr) != std::end(kCalls);
}

// Whether the thread is blocked in such a call now (/proc/self/task/TID/syscall starts with the
// number of the call it is in; "running" or -1 when in none).
bool inSleepingCall(int tid) {
  char buf[256];
  if (!readProcFile(tid, "syscall", buf, sizeof(buf))) return false;
  char* end = nullptr;
  const long nr = strtol(buf, &end, 10);
  return end != buf && nr >= 0 && cutShortBySignals(nr);
}

bool ask(int tid) {
  siginfo_t info{};
  info.si_signo = g_signal;
  info.si_code = SI_QUEUE;
  info.si_pid = getpid();
  info.si_uid = getuid();
  info.si_value.sival_ptr = static_cast<void*>(g_slots);
  return syscall(SYS_rt_tgsigqueueinfo, getpid(), tid, g_signal, &info) == 0;
}

struct Asked {
  int tid;
  int slot;  // -1: not asked
  uint32_t status;
  uint32_t flags = 0;
  std::vector<uint64_t> python;  // Python frames read from the interpreter's thread list
};

// Waits for the asked threads until the deadline; gives up on the others.
void collect(std::vector<Asked>* asked, uint64_t generation, int64_t deadline_ns) {
  for (;;) {
    bool all = true;
    for (const Asked& a : *asked) {
      if (a.slot >= 0 && a.status == 0 &&
          stateOf(g_slots[a.slot].word.load(std::memory_order_acquire)) != kDone) {
        all = false;
        break;
      }
    }
    if (all || monotonicNs() >= deadline_ns) break;
    const timespec pause{0, 50 * 1000};
    nanosleep(&pause, nullptr);
  }
  for (Asked& a : *asked) {
    if (a.slot < 0 || a.status != 0) continue;
    uint64_t expected = word(generation, kRequested);
    if (g_slots[a.slot].word.compare_exchange_strong(expected, word(generation, kAbandoned),
                                                     std::memory_order_acq_rel) ||
        stateOf(expected) != kDone) {
      a.status = format::kThreadNoAnswer;
    } else {
      a.status = format::kThreadAnswered;
    }
  }
}

// Threads that did not capture their own stack (no answer, not asked) get their Python frames
// from the interpreter's thread list (python_threads.cc), when the process runs one.
void addListedPythonFrames(std::vector<Asked>* asked) {
  PythonFrames* python = g_python.load(std::memory_order_acquire);
  const int depth = g_python_depth.load(std::memory_order_relaxed);
  if (python == nullptr || !g_python_enabled.load(std::memory_order_relaxed) || depth <= 0) return;
  const auto silent = [](const Asked& a) {
    return a.status == format::kThreadNoAnswer || a.status == format::kThreadNotAsked;
  };
  if (std::none_of(asked->begin(), asked->end(), silent)) return;
  std::vector<PythonFrames::ThreadState> states(kMaxSlots);
  states.resize(static_cast<size_t>(python->listThreads(states.data(), kMaxSlots)));
  for (Asked& a : *asked) {
    if (!silent(a)) continue;
    for (const PythonFrames::ThreadState& state : states) {
      if (state.tid != a.tid) continue;
      a.python.resize(static_cast<size_t>(depth));
      a.python.resize(
          static_cast<size_t>(python->captureThread(state.tstate, a.python.data(), depth)));
      break;
    }
  }
}

// The records, written under the region's sequence word.
void publish(format::BboxHeader* h, const std::vector<Asked>& asked, uint32_t reason, int self) {
  auto seq = format::atomicField(h->threads_seq);
  const uint32_t before = seq.load(std::memory_order_relaxed);
  seq.store(before + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  format::ThreadRecord* records = format::threadRecords(h);
  for (size_t i = 0; i < asked.size(); ++i) {
    format::ThreadRecord& r = records[i];
    std::memset(&r, 0, sizeof(r));
    r.tid = asked[i].tid;
    r.status = asked[i].status;
    r.flags = asked[i].flags;
    if (r.status == format::kThreadAnswered) {
      const Slot& slot = g_slots[asked[i].slot];
      r.python_depth = slot.python_depth;
      r.native_depth = slot.native_depth;
      std::memcpy(r.frames, slot.frames, sizeof(uint64_t) * (r.python_depth + r.native_depth));
    } else if (!asked[i].python.empty()) {
      r.python_depth = static_cast<uint32_t>(asked[i].python.size());
      std::memcpy(r.frames, asked[i].python.data(), sizeof(uint64_t) * r.python_depth);
      r.flags |= format::kThreadPythonListed;
    } else if (r.status == format::kThreadDumper) {
      int py = 0;
      PythonFrames* python = g_python.load(std::memory_order_acquire);
      if (python != nullptr && g_python_enabled.load(std::memory_order_relaxed))
        py = python->capture(r.frames, g_python_depth.load(std::memory_order_relaxed));
      const int room = static_cast<int>(format::kThreadMaxFrames) - py;
      r.python_depth = static_cast<uint32_t>(py);
      r.native_depth = static_cast<uint32_t>(captureStack(
          r.frames + py, std::min(room, g_native_depth.load(std::memory_order_relaxed)), 0));
    }
    describeFromProc(r.tid, g_signal, &r);
  }
  format::atomicField(h->thread_count)
      .store(static_cast<uint32_t>(asked.size()), std::memory_order_relaxed);
  format::atomicField(h->threads_ns).store(realtimeNs(), std::memory_order_relaxed);
  format::atomicField(h->threads_reason).store(reason, std::memory_order_relaxed);
  format::atomicField(h->threads_dumper_tid).store(self, std::memory_order_relaxed);
  seq.store(before + 2, std::memory_order_release);
}

}  // namespace

bool snapshotsSupported() {
#if defined(__SANITIZE_THREAD__)
  return false;
#else
  return true;
#endif
}

bool installSnapshotHandler(const SnapshotOptions& options) {
  g_python.store(options.python, std::memory_order_release);
  g_native_depth.store(std::clamp(options.native_depth, 0, int{format::kThreadMaxFrames}));
  g_python_depth.store(std::clamp(options.python_depth, 0, int{format::kThreadMaxFrames}));
  g_deadline_ms = options.deadline_ms;
  if (g_installed) return g_signal == options.signal;
  if (options.signal <= 0 || !snapshotsSupported()) return false;
  struct sigaction sa {};
  sa.sa_sigaction = onSnapshotSignal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  if (sigaction(options.signal, &sa, &g_prev) != 0) return false;
  g_signal = options.signal;
  g_installed = true;
  return true;
}

SnapshotResult takeThreadSnapshot(format::BboxHeader* h, uint32_t reason) {
  SnapshotResult result;
  if (!g_installed || h == nullptr || h->thread_capacity == 0) return result;
  const int64_t start = monotonicNs();
  // At exit the interpreter may be finalized: its thread states are not to be read then.
  g_python_enabled.store(reason != static_cast<uint32_t>(format::DumpReason::kExit));
  const int self = static_cast<int>(syscall(SYS_gettid));
  const std::vector<int> tids = listThreads();
  const uint64_t generation = g_generation.load(std::memory_order_relaxed) + 1;
  g_generation.store(generation, std::memory_order_release);
  std::vector<Asked> asked;
  uint32_t next = 0;
  for (const int tid : tids) {
    if (asked.size() >= std::min(h->thread_capacity, kMaxSlots)) break;
    if (tid == self) {
      asked.push_back({tid, -1, format::kThreadDumper});
      continue;
    }
    while (next < kMaxSlots &&
           stateOf(g_slots[next].word.load(std::memory_order_acquire)) == kCapturing) {
      ++next;
    }
    if (next >= kMaxSlots) {
      asked.push_back({tid, -1, format::kThreadNotAsked});
      continue;
    }
    g_slots[next].tid.store(tid, std::memory_order_relaxed);
    g_slots[next].word.store(word(generation, kRequested), std::memory_order_release);
    asked.push_back({tid, static_cast<int>(next++), 0});
  }
  g_slot_count.store(next, std::memory_order_release);
  const bool python = g_python.load(std::memory_order_acquire) != nullptr;
  for (Asked& a : asked) {
    if (a.slot >= 0 && !python && inSleepingCall(a.tid)) {
      uint64_t expected = word(generation, kRequested);
      g_slots[a.slot].word.compare_exchange_strong(expected, word(generation, kAbandoned));
      a.status = format::kThreadNotAsked;
      a.flags = format::kThreadInSleepingCall;
      continue;
    }
    if (a.slot >= 0 && !ask(a.tid)) {
      uint64_t expected = word(generation, kRequested);
      g_slots[a.slot].word.compare_exchange_strong(expected, word(generation, kAbandoned));
      a.status = errno == ESRCH ? format::kThreadGone : format::kThreadNotAsked;
    }
  }
  collect(&asked, generation, start + int64_t{g_deadline_ms} * 1000000);
  addListedPythonFrames(&asked);
  publish(h, asked, reason, self);
  result.threads = static_cast<uint32_t>(asked.size());
  for (const Asked& a : asked) {
    if (a.status == format::kThreadAnswered || a.status == format::kThreadDumper) ++result.answered;
  }
  result.elapsed_ns = monotonicNs() - start;
  return result;
}

namespace detail {

bool maskHasSignal(const char* hex_mask, int signal) {
  while (*hex_mask == ' ' || *hex_mask == '\t') ++hex_mask;
  const size_t digits = strspn(hex_mask, "0123456789abcdefABCDEF");
  if (signal <= 0 || digits == 0) return false;
  const size_t bit = static_cast<size_t>(signal - 1);
  if (bit / 4 >= digits) return false;
  const char c = hex_mask[digits - 1 - bit / 4];
  const int nibble = c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
  return ((nibble >> (bit % 4)) & 1) != 0;
}

}  // namespace detail

}  // namespace ncclrec::recorder
