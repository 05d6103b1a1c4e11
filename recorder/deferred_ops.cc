// Recorder's deferred ops (recorder.h): ops recorded by begin() whose start and completion come
// from NCCL's profiler callbacks (interpose/profiler_plugin.cc) instead of end(). Record path:
// any thread, no allocation, lock or log.
#include "format/bbox_ring.h"
#include "format/nccl_result.h"
#include "recorder/clock.h"
#include "recorder/recorder.h"

namespace ncclrec::recorder {

using format::acceptedResult;
using format::atomicField;
using format::EventState;
using format::OpType;

void Recorder::opStarted(const CallHandle& call, int64_t now_ns) {
  format::Event* e = call.slot;
  if (e == nullptr || !format::slotHolds(e, call.index)) return;
  auto expected = static_cast<uint8_t>(EventState::kEnqueued);
  atomicField(e->start_ns).store(now_ns, std::memory_order_relaxed);
  atomicField(e->state).compare_exchange_strong(
      expected, static_cast<uint8_t>(EventState::kStarted), std::memory_order_release);
}

void Recorder::setP2pPeer(const CallHandle& call, int peer) {
  format::Event* e = call.slot;
  CommState* cs = call.comm;
  if (e == nullptr || cs == nullptr || peer < 0 || peer >= cs->nranks) return;
  if (!format::slotHolds(e, call.index)) return;
  auto& counters = static_cast<OpType>(e->op) == OpType::kSend ? cs->send_seq : cs->recv_seq;
  const uint64_t seq = counters[peer].fetch_add(1, std::memory_order_relaxed) + 1;
  atomicField(e->peer).store(peer, std::memory_order_relaxed);
  atomicField(e->op_seq).store(seq, std::memory_order_relaxed);
}

uint32_t Recorder::commIndexOf(const CallHandle& call) {
  if (call.comm != nullptr) return call.comm->index;
  if (call.slot == nullptr || !format::slotHolds(call.slot, call.index)) return format::kNoComm;
  return call.slot->comm_index;
}

void Recorder::opCompleted(const CallHandle& call, int result) {
  if (call.slot == nullptr || !format::slotHolds(call.slot, call.index)) return;
  // Already ended (a failed call, completed by end()): the first word stays.
  const auto state = static_cast<EventState>(atomicField(call.slot->state).load());
  if (state == EventState::kCompleted || state == EventState::kFailed) return;
  const int64_t now = realtimeNs();
  if (format::slotHolds(call.slot, call.index) &&
      atomicField(call.slot->start_ns).load(std::memory_order_relaxed) == 0) {
    atomicField(call.slot->start_ns).store(now, std::memory_order_relaxed);
  }
  completeEvent(call.slot, call.index, result, now);
  if (!acceptedResult(result)) requestDump(format::DumpReason::kNcclError);
}

}  // namespace ncclrec::recorder
