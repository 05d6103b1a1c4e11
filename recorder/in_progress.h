// Ops of a nonblocking communicator whose call (or ncclGroupEnd) returned ncclInProgress: NCCL has
// not launched their work yet (it does so later, from its own thread), so they are held here until
// ncclCommGetAsyncError reports the communicator settled (Recorder::asyncSettled). A held op timed
// by CUDA markers keeps its ticket: its end marker is recorded at the settle, after NCCL's launch,
// never before the kernel it must follow.
//
// NCCL's contract makes the settle the user's job: "If any NCCL function returns ncclInProgress,
// users must query the communicator state until it becomes ncclSuccess before calling another
// NCCL function" (NCCL user guide, nccl4py status methods and the nonblocking examples), and its
// thread-safety rule forbids operating one communicator from two threads at once. So the wrapped
// ncclCommGetAsyncError that the user polls is where held ops settle; the watchdog never calls
// NCCL on a communicator it does not own.
//
// A bounded lock-free queue (one sequence word per cell, Vyukov's MPMC scheme): any thread pushes
// (the record path: no allocation, lock or log), any thread drains (two threads may poll
// ncclCommGetAsyncError at once, as PyTorch's main thread and watchdog do).
#pragma once

#include <atomic>
#include <cstdint>

#include "format/bbox_layout.h"

namespace ncclrec::recorder {

struct HeldOp {
  uint64_t index = 0;
  format::Event* slot = nullptr;
  const void* stream = nullptr;
  int32_t cuda_ticket = -1;                 // >= 0: its end marker waits for the settle
  std::atomic<uint8_t>* arbiter = nullptr;  // see CallHandle::arbiter
};

class InProgressQueue {
 public:
  static constexpr uint32_t kCapacity = 128;  // power of two

  InProgressQueue() {
    for (uint32_t i = 0; i < kCapacity; ++i) cells_[i].seq.store(i, std::memory_order_relaxed);
  }
  InProgressQueue(const InProgressQueue&) = delete;
  InProgressQueue& operator=(const InProgressQueue&) = delete;

  // False when full: the caller decides the op's completion now, as without this queue.
  bool push(const HeldOp& op) {
    uint64_t pos = tail_.load(std::memory_order_relaxed);
    while (true) {
      Cell& c = cells_[pos & (kCapacity - 1)];
      const uint64_t seq = c.seq.load(std::memory_order_acquire);
      if (seq == pos) {
        if (tail_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          c.op = op;
          c.seq.store(pos + 1, std::memory_order_release);
          return true;
        }
      } else if (seq < pos) {
        return false;
      } else {
        pos = tail_.load(std::memory_order_relaxed);
      }
    }
  }

  // The oldest held op; false when none is (or the next is still being written).
  bool pop(HeldOp* out) {
    uint64_t pos = head_.load(std::memory_order_relaxed);
    while (true) {
      Cell& c = cells_[pos & (kCapacity - 1)];
      const uint64_t seq = c.seq.load(std::memory_order_acquire);
      if (seq == pos + 1) {
        if (head_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          *out = c.op;
          c.seq.store(pos + kCapacity, std::memory_order_release);
          return true;
        }
      } else if (seq < pos + 1) {
        return false;
      } else {
        pos = head_.load(std::memory_order_relaxed);
      }
    }
  }

  bool empty() const {
    return head_.load(std::memory_order_acquire) == tail_.load(std::memory_order_acquire);
  }

 private:
  struct Cell {
    std::atomic<uint64_t> seq{0};
    HeldOp op;
  };
  Cell cells_[kCapacity];
  alignas(64) std::atomic<uint64_t> tail_{0};
  alignas(64) std::atomic<uint64_t> head_{0};
};

}  // namespace ncclrec::recorder
