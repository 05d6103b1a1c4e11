// Reading this process's own memory where it may not be mapped (a frame pointer that is not one,
// a frame another thread freed meanwhile) without faulting: the kernel copies it and answers
// "not mapped" instead. Used by the frame-pointer unwinder (stacks.cc, also from signal handlers)
// and by the reader of other threads' Python frames (python_threads.cc).
//
// Async-signal-safe: process_vm_readv on ourselves, else /proc/self/mem (a seccomp policy may
// refuse the former), opened once and kept; no allocation, no lock.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ncclrec::recorder {

// Copies `size` bytes at `address` into `out`; false when any of them is not mapped (or neither
// way of reading is allowed).
bool safeRead(uintptr_t address, void* out, size_t size);

}  // namespace ncclrec::recorder
