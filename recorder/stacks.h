// Call stacks on the record path: capture return addresses of the calling thread, and intern them
// into the black box's stack table so that each event carries a 32-bit stack id.
//
// Capture uses either libunwind's unw_backtrace (opened with dlopen(RTLD_LOCAL), never linked:
// linking it would replace the process's C++ exception unwinder) or a bounded frame-pointer walk.
// Symbolization happens later (recorder/dump/symbolize.h, or offline from the module map).
#pragma once

#include <cstdint>

#include "format/bbox_layout.h"

namespace ncclrec::recorder {

enum class UnwindMode {
  kAuto,          // libunwind if it loads, else frame pointers
  kLibunwind,     // libunwind; frame pointers when it cannot be loaded
  kFramePointer,  // frame pointers only (exact only for code built with -fno-omit-frame-pointer)
};

// Chooses how captureStack unwinds. Call once per process before the first capture (calling it
// again switches the mode, but never concurrently with itself). Returns whether libunwind was
// loaded and is now in use. When `reason` is not null it receives a static, NUL-terminated
// description of what was chosen and why (e.g. the dlopen error), valid until the next call.
// Logs nothing itself.
bool initUnwinder(UnwindMode mode, const char** reason = nullptr);

// The mode captureStack uses now: kLibunwind or kFramePointer (never kAuto). kFramePointer until
// initUnwinder has loaded libunwind.
UnwindMode activeUnwindMode();

// Captures up to `max_depth` return addresses of the calling thread into `out`, innermost first:
// out[0] is the return address of this call (an address in the caller) unless `skip` > 0, which
// drops that many innermost frames. Returns the number written (0..max_depth).
// Hot path: no allocation, lock, syscall or log, except on a thread's first call in
// frame-pointer mode (finds the thread's stack bounds) and libunwind's own one-time per-thread
// cache setup. Never faults on code built without frame pointers: the walk stops at the first
// frame pointer that is outside the thread's stack, not above the previous one, or misaligned.
int captureStack(uint64_t* out, int max_depth, int skip);

// From a signal handler (async-signal-safe): the interrupted code's stack, `ucontext` being the
// handler's third argument. out[0] is the interrupted instruction's address + 1 (so that it
// symbolizes like the return addresses after it). Uses libunwind when captureStack does, except
// when the signal interrupted libunwind itself on this thread; else frame pointers, each read
// checked with process_vm_readv (a bad frame pointer ends the walk, never faults).
int captureInterruptedStack(const void* ucontext, uint64_t* out, int max_depth);

// Interns stacks into the stack table of a mapped black box (StackRecord array described by the
// header). Lock-free and wait-free apart from a short bounded spin; safe from any number of
// threads. Ids are slot indices and stay valid for the life of the file.
class StackTable {
 public:
  explicit StackTable(format::BboxHeader* header);

  // Returns the id of the stack equal to frames[0..depth), inserting it if new; depth is capped
  // at the header's stack_depth (the caller flags the event kEventStackTruncated). Returns
  // format::kNoStack for an empty stack, or when the table is full (counted in stacks_dropped).
  uint32_t intern(const uint64_t* frames, int depth);

 private:
  format::BboxHeader* header_;
  uint32_t capacity_;
  uint32_t max_depth_;
};

namespace detail {
// The frame-pointer walk behind captureStack, exposed for tests: starts at frame `fp`, reads only
// inside [lo, hi), and stops on the first invalid frame. Writes return addresses after skipping
// `skip` of them.
int walkFramePointers(uintptr_t fp, uintptr_t lo, uintptr_t hi, uint64_t* out, int max_depth,
                      int skip);
// 64-bit hash of a stack, never 0 (0 marks an empty slot).
uint64_t hashStack(const uint64_t* frames, uint32_t depth);
}  // namespace detail

}  // namespace ncclrec::recorder
