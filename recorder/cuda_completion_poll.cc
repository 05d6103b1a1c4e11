// CudaCompletion's watchdog side: polling the markers of pending ops (cuda_completion.h).
#include "recorder/busy_streams.h"
#include "recorder/clock.h"
#include "recorder/cuda_completion.h"
#include "recorder/cuda_driver.h"

namespace ncclrec::recorder {
namespace {

constexpr int kCaptureModeRelaxed = 2;
// cuEventQuery of an event last recorded on a capturing stream.
constexpr CuResult kCudaErrorCapturedEvent = 907;
// "Not permitted while a stream is capturing": seen from event queries racing another thread's
// capture (ROCm's HIP answers so, pytorch#175377); transient, so the op stays pending.
constexpr CuResult kCudaErrorStreamCaptureUnsupported = 900;

}  // namespace

int CudaCompletion::query(Slot& slot, void* event) {
  CuResult r = driver_->eventQuery(event);
  if (r == kCudaErrorInvalidContext) {
    // Some drivers want a current context even for handle-based queries.
    if (driver_->ctxPushCurrent(slot.ctx) != kCudaSuccess) return r;
    r = driver_->eventQuery(event);
    void* popped = nullptr;
    driver_->ctxPopCurrent(&popped);
  }
  return r;
}

// For an op whose end marker is not done: reports it started once it is. With start markers the
// start marker says so; without, an op is started when no earlier op of its stream is pending
// (the caller adds each still-pending op's stream to busy_ after this call, in hand-off order).
bool CudaCompletion::observeStart(Slot& slot, Sink& sink, int64_t now) {
  if (slot.started) return true;
  const bool started = markers_ == Markers::kStartAndEnd ? query(slot, slot.start) == kCudaSuccess
                                                         : !busy_->contains(slot.stream, slot.ctx);
  if (started) {
    slot.started = true;
    sink.started(slot.event_index, now);
  }
  return started;
}

size_t CudaCompletion::poll(Sink& sink) {
  // Event queries are "potentially unsafe" during another thread's global-mode graph capture
  // and would invalidate it; relaxed mode exempts this thread (as PyTorch's watchdog does).
  thread_local bool relaxed_capture_mode = false;
  if (!relaxed_capture_mode && driver_->threadExchangeStreamCaptureMode != nullptr) {
    int mode = kCaptureModeRelaxed;
    relaxed_capture_mode = driver_->threadExchangeStreamCaptureMode(&mode) == kCudaSuccess;
  }

  const uint64_t mask = capacity_ - 1;
  while (true) {
    const uint64_t cell = handoff_[handoff_head_ & mask].load(std::memory_order_acquire);
    if (static_cast<uint32_t>(cell >> 32) != static_cast<uint32_t>(handoff_head_ + 1)) break;
    pending_[pending_count_++] = static_cast<uint32_t>(cell);
    ++handoff_head_;
  }

  const int64_t now = realtimeNs();
  busy_->clear();
  size_t kept = 0;
  // In hand-off order, which on one stream is issue order: an op's predecessors are seen first.
  for (size_t k = 0; k < pending_count_; ++k) {
    const uint32_t index = pending_[k];
    Slot& slot = slots_[index];
    const CuResult r = query(slot, slot.end);
    if (r == kCudaErrorNotReady || r == kCudaErrorStreamCaptureUnsupported) {
      observeStart(slot, sink, now);
      busy_->insert(slot.stream, slot.ctx);
      pending_[kept++] = index;
    } else if (r == kCudaSuccess) {
      if (!slot.started) sink.started(slot.event_index, now);
      sink.completed(slot.event_index, now);
      release(index);
    } else if (r == kCudaErrorCapturedEvent) {
      // Recorded into a capture: no work of this op runs on the stream now. The events stay
      // usable: the next record replaces the captured state.
      sink.captured(slot.event_index, now);
      release(index);
    } else {
      sink.lost(slot.event_index, r, now);
      dropEvents(slot);
      release(index);
    }
  }
  pending_count_ = kept;
  return kept;
}

}  // namespace ncclrec::recorder
