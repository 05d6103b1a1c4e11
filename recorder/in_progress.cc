// Ops of nonblocking communicators on host backends (Recorder::deferInProgress, asyncSettled): a
// call that returned ncclInProgress runs in the background, so its event stays enqueued until
// ncclCommGetAsyncError reports the communicator settled.
#include <mutex>

#include "recorder/clock.h"
#include "recorder/comm_table.h"
#include "recorder/format/nccl_result.h"
#include "recorder/recorder.h"

namespace ncclrec::recorder {

bool Recorder::deferInProgress(CommState* cs, format::Event* slot, uint64_t index) {
  if (cs == nullptr) return false;
  std::lock_guard<std::mutex> lock(cs->in_progress_mu);
  const uint32_t n = cs->in_progress_count.load(std::memory_order_relaxed);
  if (n >= CommState::kMaxInProgress) return false;  // too many: complete as before
  cs->in_progress[n] = {index, slot};
  cs->in_progress_count.store(n + 1, std::memory_order_release);
  return true;
}

void Recorder::asyncSettled(const void* handle, int state) {
  if (state == format::kNcclInProgress) return;
  CommState* cs = comms_->find(handle);
  if (cs == nullptr || cs->in_progress_count.load(std::memory_order_acquire) == 0) return;
  std::lock_guard<std::mutex> lock(cs->in_progress_mu);
  const int64_t now = realtimeNs();
  const uint32_t n = cs->in_progress_count.load(std::memory_order_relaxed);
  for (uint32_t i = 0; i < n; ++i) {
    completeEvent(cs->in_progress[i].slot, cs->in_progress[i].index, state, now);
  }
  cs->in_progress_count.store(0, std::memory_order_release);
}

}  // namespace ncclrec::recorder
