// Ops of nonblocking communicators (Recorder::holdInProgress, asyncSettled; in_progress.h): a call
// that returned ncclInProgress has not launched yet, so its op is held, enqueued, until
// ncclCommGetAsyncError reports the communicator settled. Then a CUDA-timed op gets its end
// marker (one driver call, now after NCCL's launch), an op the profiler plugin timed is left to
// it, and any other op completes (or fails with the error the communicator settled with).
#include "format/bbox_ring.h"
#include "format/nccl_result.h"
#include "recorder/clock.h"
#include "recorder/comm_table.h"
#include "recorder/cuda_completion.h"
#include "recorder/recorder.h"

namespace ncclrec::recorder {

using format::atomicField;

bool Recorder::holdInProgress(CommState* cs, const HeldOp& op) {
  return cs != nullptr && cs->in_progress.push(op);  // full: decided now, as before
}

bool Recorder::pluginTakes(std::atomic<uint8_t>* arbiter, format::Event* slot, uint64_t index,
                           int32_t ticket, const void* stream) {
  if (arbiter == nullptr) return false;
  uint8_t owner = kOwnerUndecided;
  if (arbiter->compare_exchange_strong(owner, kOwnerMarker, std::memory_order_acq_rel) ||
      owner == kOwnerMarker) {
    if (format::slotHolds(slot, index))
      atomicField(slot->flags).fetch_and(~format::kEventProfilerTimed, std::memory_order_relaxed);
    return false;
  }
  // The plugin saw the op's kernel channels: its ticket goes back unused (no driver call).
  if (ticket >= 0) cuda_->afterCall(ticket, const_cast<void*>(stream), index, false);
  if (format::slotHolds(slot, index))
    atomicField(slot->flags).fetch_and(~format::kEventCudaTimed, std::memory_order_relaxed);
  return true;
}

bool Recorder::markWithCuda(const HeldOp& op, bool ok) {
  if (op.cuda_ticket < 0 ||
      !cuda_->afterCall(op.cuda_ticket, const_cast<void*>(op.stream), op.index, ok)) {
    return false;
  }
  if (format::slotHolds(op.slot, op.index)) {
    atomicField(op.slot->flags).fetch_or(format::kEventCudaTimed, std::memory_order_relaxed);
    atomicField(op.slot->start_ns).store(0, std::memory_order_relaxed);
  }
  return true;
}

void Recorder::asyncSettled(const void* handle, int state) {
  if (state == format::kNcclInProgress) return;
  CommState* cs = comms_->find(handle);
  if (cs == nullptr) return;
  const bool ok = format::acceptedResult(state);
  comms_->settleCreation(cs, ok);
  if (cs->in_progress.empty()) return;
  const int64_t now = realtimeNs();
  HeldOp op;
  while (cs->in_progress.pop(&op)) {
    if (ok && pluginTakes(op.arbiter, op.slot, op.index, op.cuda_ticket, op.stream)) continue;
    if (markWithCuda(op, ok)) {
      if (format::slotHolds(op.slot, op.index))
        atomicField(op.slot->result).store(state, std::memory_order_relaxed);
      continue;
    }
    completeEvent(op.slot, op.index, state, now);
  }
}

}  // namespace ncclrec::recorder
