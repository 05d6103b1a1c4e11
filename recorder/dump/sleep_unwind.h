// Native frames of a thread that the snapshot did not interrupt because it sleeps in a call a
// signal would cut short (nanosleep, poll...; recorder/thread_snapshot.cc). A thread blocked in a
// system call has its user registers saved by the kernel, which tells the stack pointer and the
// program counter (/proc/self/task/TID/syscall); libdw unwinds from those two by the modules'
// call-frame information (.eh_frame), reading the stack through safeRead. Code compiled with frame
// pointers needs the frame register, which the kernel does not tell: the walk ends at the first
// such frame, the innermost user frame included. Frames are kept only when the thread sat in the
// same call, at the same stack pointer, before and after the walk: never frames of a thread that
// moved meanwhile.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

namespace ncclrec::dump {

// A thread's line of /proc/PID/task/TID/syscall while it blocks in a system call:
// "NR ARG1 ... ARG6 SP PC" (hex values with 0x). nullopt for "running", "-1 SP PC" (blocked
// outside a system call) and anything else.
struct BlockedCall {
  long nr = 0;
  uint64_t sp = 0;
  uint64_t pc = 0;
  friend bool operator==(const BlockedCall&, const BlockedCall&) = default;
};
std::optional<BlockedCall> parseBlockedCall(std::string_view line);

// Unwinds threads of this process blocked in system calls; one libdw session (the module map read
// once) for all the threads of a dump. Not thread-safe; off the record path (allocates, opens
// files).
class BlockedThreadUnwinder {
 public:
  BlockedThreadUnwinder();
  ~BlockedThreadUnwinder();
  BlockedThreadUnwinder(const BlockedThreadUnwinder&) = delete;
  BlockedThreadUnwinder& operator=(const BlockedThreadUnwinder&) = delete;

  // The thread's native frames, innermost first (its program counter, then return addresses),
  // at most `max_frames`; empty when it is not blocked in a system call, moved during the walk,
  // or libdw is not available (built without it, or this architecture's registers unknown).
  std::vector<uint64_t> unwind(int tid, size_t max_frames);

 private:
  struct Session;  // libdw, opened on first use
  std::unique_ptr<Session> session_;
  bool failed_ = false;
};

}  // namespace ncclrec::dump
