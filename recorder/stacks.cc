#include "recorder/stacks.h"

#include <dlfcn.h>
#include <pthread.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>

#include "format/bbox_ring.h"
#include "recorder/real_dl.h"
#include "recorder/safe_read.h"

namespace ncclrec::recorder {
namespace {

using UnwBacktraceFn = int (*)(void** buffer, int size);
using UnwSetCachingPolicyFn = int (*)(void* address_space, int policy);

// libunwind's UNW_CACHE_PER_THREAD: its default global cache takes a lock and masks signals (a
// syscall) on every cache access; the per-thread cache does neither.
constexpr int kUnwCachePerThread = 2;

#if defined(__x86_64__)
constexpr char kUnwArchPrefix[] = "_ULx86_64_";
#elif defined(__aarch64__)
constexpr char kUnwArchPrefix[] = "_ULaarch64_";
#else
constexpr char kUnwArchPrefix[] = "";
#endif

// Set by initUnwinder before the first capture; read on every capture. The handle is never
// closed: captures may be running in other threads.
std::atomic<UnwBacktraceFn> g_unw_backtrace{nullptr};
void* g_libunwind = nullptr;
char g_reason[320];

// Set while this thread is inside libunwind: a snapshot signal arriving then must not enter
// libunwind again (its per-thread cache is not re-entrant), and walks frame pointers instead.
thread_local bool t_in_libunwind __attribute__((tls_model("initial-exec")));

// Frames that libunwind reports above the caller of captureStack (unw_backtrace itself, and
// captureStack) plus room for `skip`; captureStack locates its caller by return address.
constexpr int kMaxInternalFrames = 8;
constexpr int kMaxCaptureFrames = 256;

struct ThreadStackBounds {
  uintptr_t lo;
  uintptr_t hi;
  int state;  // 0: not looked up yet, 1: known, 2: unknown (walk nothing)
};
// Trivially constructible and destructible: no TLS init guard or destructor registration.
thread_local ThreadStackBounds t_stack_bounds __attribute__((tls_model("initial-exec")));

// First call on a thread only: pthread_getattr_np reads /proc/self/maps for the main thread.
__attribute__((noinline, cold)) void lookUpThreadStack(ThreadStackBounds* bounds) {
  pthread_attr_t attr;
  bounds->state = 2;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
  void* addr = nullptr;
  size_t size = 0;
  if (pthread_attr_getstack(&attr, &addr, &size) == 0 && addr != nullptr && size > 0) {
    bounds->lo = reinterpret_cast<uintptr_t>(addr);
    bounds->hi = bounds->lo + size;
    bounds->state = 1;
  }
  pthread_attr_destroy(&attr);
}

void setReason(const char* what, const char* detail) {
  std::snprintf(g_reason, sizeof(g_reason), "%s%s%s", what, detail != nullptr ? ": " : "",
                detail != nullptr ? detail : "");
}

void* openLibunwind() {
  void* handle = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) handle = dlopen("libunwind.so", RTLD_NOW | RTLD_LOCAL);
  return handle;
}

void preferPerThreadCache(void* handle) {
  if (kUnwArchPrefix[0] == '\0') return;
  char name[64];
  std::snprintf(name, sizeof(name), "%slocal_addr_space", kUnwArchPrefix);
  auto* address_space = static_cast<void**>(realDlsym(handle, name));
  std::snprintf(name, sizeof(name), "%sset_caching_policy", kUnwArchPrefix);
  auto set_policy = reinterpret_cast<UnwSetCachingPolicyFn>(realDlsym(handle, name));
  if (address_space != nullptr && set_policy != nullptr) {
    set_policy(*address_space, kUnwCachePerThread);
  }
}

// How many frames libunwind reports above captureStack's caller: fixed for a given build, so it
// is learned at the first capture and later captures ask unw_backtrace for exactly what they
// keep (each frame walked costs ~8 ns). -1 until known.
std::atomic<int> g_internal_frames{-1};

int captureWithLibunwind(UnwBacktraceFn backtrace, uintptr_t self_return, uint64_t* out,
                         int max_depth, int skip) {
  void* frames[kMaxCaptureFrames];
  const int known = g_internal_frames.load(std::memory_order_relaxed);
  if (known >= 0) {
    t_in_libunwind = true;
    const int got = backtrace(frames, std::min(kMaxCaptureFrames, known + skip + max_depth));
    t_in_libunwind = false;
    if (got > known && reinterpret_cast<uintptr_t>(frames[known]) == self_return) {
      int n = 0;
      for (int i = known + skip; i < got && n < max_depth; ++i)
        out[n++] = reinterpret_cast<uintptr_t>(frames[i]);
      return n;
    }
  }
  const int want = std::min(kMaxCaptureFrames, kMaxInternalFrames + skip + max_depth);
  t_in_libunwind = true;
  const int got = backtrace(frames, want);
  t_in_libunwind = false;
  // The caller's frame is the one whose address is captureStack's return address; everything
  // before it is unw_backtrace's and ours.
  int first = -1;
  for (int i = 0; i < std::min(got, kMaxInternalFrames); ++i) {
    if (reinterpret_cast<uintptr_t>(frames[i]) == self_return) {
      first = i;
      break;
    }
  }
  if (first < 0) return 0;
  g_internal_frames.store(first, std::memory_order_relaxed);
  int n = 0;
  for (int i = first + skip; i < got && n < max_depth; ++i) {
    out[n++] = reinterpret_cast<uintptr_t>(frames[i]);
  }
  return n;
}

bool contextRegisters(const void* ucontext, uintptr_t* pc, uintptr_t* sp, uintptr_t* fp) {
  const auto* uc = static_cast<const ucontext_t*>(ucontext);
#if defined(__x86_64__)
  *pc = static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
  *sp = static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RSP]);
  *fp = static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RBP]);
  return true;
#elif defined(__aarch64__)
  *pc = uc->uc_mcontext.pc;
  *sp = uc->uc_mcontext.sp;
  *fp = uc->uc_mcontext.regs[29];
  return true;
#else
  (void)uc;
  *pc = *sp = *fp = 0;
  return false;
#endif
}

// Frame pointers from the interrupted frame, every read checked (the interrupted code may not
// keep frame pointers, and its stack bounds are unknown in a signal handler).
int walkInterrupted(uintptr_t fp, uintptr_t sp, uint64_t* out, int n, int max_depth) {
  constexpr uintptr_t kMaxStackSpan = uintptr_t{1} << 30;
  while (n < max_depth) {
    if (fp < sp || fp - sp > kMaxStackSpan || fp % sizeof(uintptr_t) != 0) break;
    uintptr_t frame[2];
    if (!safeRead(fp, frame, sizeof(frame)) || frame[1] == 0) break;
    out[n++] = frame[1];
    if (frame[0] <= fp) break;
    fp = frame[0];
  }
  return n;
}

}  // namespace

// Signal handler: async-signal-safe (libunwind's local unwinding is; the frame-pointer walk reads
// through process_vm_readv). Frames of the handler itself and of the kernel's signal trampoline
// are dropped: the first one kept is the interrupted instruction, which libunwind reports as is.
int captureInterruptedStack(const void* ucontext, uint64_t* out, int max_depth) {
  if (out == nullptr || max_depth <= 0 || ucontext == nullptr) return 0;
  uintptr_t pc = 0, sp = 0, fp = 0;
  if (!contextRegisters(ucontext, &pc, &sp, &fp)) return 0;
  UnwBacktraceFn backtrace = g_unw_backtrace.load(std::memory_order_acquire);
  if (backtrace != nullptr && !t_in_libunwind) {
    void* frames[kMaxCaptureFrames];
    t_in_libunwind = true;
    const int got = backtrace(frames, std::min(kMaxCaptureFrames, max_depth + 16));
    t_in_libunwind = false;
    for (int i = 0; i < std::min(got, 16); ++i) {
      if (reinterpret_cast<uintptr_t>(frames[i]) != pc) continue;
      int n = 0;
      // +1: symbolizers look up a return address minus one; the interrupted instruction is not
      // a return address.
      out[n++] = pc + 1;
      for (int k = i + 1; k < got && n < max_depth; ++k)
        out[n++] = reinterpret_cast<uintptr_t>(frames[k]);
      return n;
    }
  }
  out[0] = pc + 1;
  return walkInterrupted(fp, sp, out, 1, max_depth);
}

namespace detail {

// Reads stack memory that may belong to frames the compiler laid out without frame pointers, so
// it is kept out of AddressSanitizer's view (it would flag reads of stack redzones).
__attribute__((no_sanitize("address", "hwaddress"))) int walkFramePointers(
    uintptr_t fp, uintptr_t lo, uintptr_t hi, uint64_t* out, int max_depth, int skip) {
  if (hi < lo || hi - lo < 2 * sizeof(uintptr_t)) return 0;
  int n = 0;
  // Every frame read is at or above the first one and below hi, so all reads stay inside the
  // part of the stack that is in use (mapped), whatever the frame pointers hold.
  while (n < max_depth) {
    if (fp < lo || fp > hi - 2 * sizeof(uintptr_t) || fp % sizeof(uintptr_t) != 0) break;
    const auto* frame = reinterpret_cast<const uintptr_t*>(fp);
    const uintptr_t next = frame[0];
    const uintptr_t ret = frame[1];
    if (ret == 0) break;
    if (skip > 0) {
      --skip;
    } else {
      out[n++] = ret;
    }
    if (next <= fp) break;
    fp = next;
  }
  return n;
}

uint64_t hashStack(const uint64_t* frames, uint32_t depth) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ depth;
  for (uint32_t i = 0; i < depth; ++i) {
    h ^= frames[i];
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h == 0 ? 1 : h;
}

}  // namespace detail

bool initUnwinder(UnwindMode mode, const char** reason) {
  bool loaded = false;
  if (mode == UnwindMode::kFramePointer) {
    g_unw_backtrace.store(nullptr, std::memory_order_release);
    setReason("frame-pointer unwinding requested", nullptr);
  } else {
    if (g_libunwind == nullptr) g_libunwind = openLibunwind();
    if (g_libunwind == nullptr) {
      setReason("libunwind not loaded, using frame pointers", dlerror());
    } else {
      auto backtrace = reinterpret_cast<UnwBacktraceFn>(realDlsym(g_libunwind, "unw_backtrace"));
      if (backtrace == nullptr) {
        setReason("libunwind has no unw_backtrace, using frame pointers", dlerror());
      } else {
        preferPerThreadCache(g_libunwind);
        g_unw_backtrace.store(backtrace, std::memory_order_release);
        setReason("using libunwind", nullptr);
        loaded = true;
      }
    }
    if (!loaded) g_unw_backtrace.store(nullptr, std::memory_order_release);
  }
  if (reason != nullptr) *reason = g_reason;
  return loaded;
}

UnwindMode activeUnwindMode() {
  return g_unw_backtrace.load(std::memory_order_acquire) != nullptr ? UnwindMode::kLibunwind
                                                                    : UnwindMode::kFramePointer;
}

// noinline: out[0] is defined as this function's return address, so it must have a frame of its
// own. __builtin_frame_address(0) also makes the compiler keep a frame pointer here.
__attribute__((noinline)) int captureStack(uint64_t* out, int max_depth, int skip) {
  if (out == nullptr || max_depth <= 0) return 0;
  if (skip < 0) skip = 0;
  const auto self_return = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  if (UnwBacktraceFn backtrace = g_unw_backtrace.load(std::memory_order_acquire)) {
    return captureWithLibunwind(backtrace, self_return, out, max_depth, skip);
  }
  ThreadStackBounds& bounds = t_stack_bounds;
  if (bounds.state == 0) lookUpThreadStack(&bounds);
  if (bounds.state != 1) return 0;
  const auto fp = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  return detail::walkFramePointers(fp, std::max(bounds.lo, fp), bounds.hi, out, max_depth, skip);
}

StackTable::StackTable(format::BboxHeader* header)
    : header_(header),
      capacity_(header->stack_capacity),
      max_depth_(std::min(header->stack_depth, format::kMaxStackDepth)) {}

uint32_t StackTable::intern(const uint64_t* frames, int depth) {
  if (depth <= 0 || frames == nullptr) return format::kNoStack;
  if (capacity_ == 0 || max_depth_ == 0) {
    format::atomicField(header_->stacks_dropped).fetch_add(1, std::memory_order_relaxed);
    return format::kNoStack;
  }
  const uint32_t n = std::min(static_cast<uint32_t>(depth), max_depth_);
  const uint64_t hash = detail::hashStack(frames, n);
  const uint32_t start = static_cast<uint32_t>(hash % capacity_);
  for (uint32_t probe = 0; probe < capacity_; ++probe) {
    uint32_t slot = start + probe;
    if (slot >= capacity_) slot -= capacity_;
    format::StackRecord* record = format::stackRecord(header_, slot);
    uint64_t seen = format::atomicField(record->hash).load(std::memory_order_acquire);
    if (seen == 0) {
      if (format::atomicField(record->hash)
              .compare_exchange_strong(seen, hash, std::memory_order_acq_rel,
                                       std::memory_order_acquire)) {
        record->depth = n;
        std::memcpy(record->frames, frames, sizeof(uint64_t) * n);
        format::atomicField(record->valid).store(format::kValidMark, std::memory_order_release);
        format::atomicField(header_->stack_count).fetch_add(1, std::memory_order_relaxed);
        return slot;
      }
      // Lost the race; `seen` now holds the winner's hash.
    }
    if (seen != hash) continue;
    // Another thread may be writing this record right now. Give it a short, bounded time; if it
    // is still unpublished (the writer was preempted), take the slot on the strength of the
    // 64-bit hash rather than insert a duplicate: a collision inside that window is far less
    // likely than the spin running out, and blocking is not an option.
    bool published = false;
    for (int spin = 0; spin < 4096; ++spin) {
      if (format::atomicField(record->valid).load(std::memory_order_acquire) ==
          format::kValidMark) {
        published = true;
        break;
      }
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
    }
    if (!published) return slot;
    if (record->depth == n && std::memcmp(record->frames, frames, sizeof(uint64_t) * n) == 0) {
      return slot;
    }
  }
  format::atomicField(header_->stacks_dropped).fetch_add(1, std::memory_order_relaxed);
  return format::kNoStack;
}

}  // namespace ncclrec::recorder
