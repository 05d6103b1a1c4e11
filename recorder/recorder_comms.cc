// Recorder's communicator bookkeeping (recorder.h): the process's rank from its first
// communicator, created, failed and ended communicators, split and init-all counters. Called by
// the wrappers on the calling thread; nothing here is on the per-collective record path.
#include <atomic>
#include <string>

#include "recorder/clock.h"
#include "recorder/format/bbox_ring.h"
#include "recorder/format/nccl_result.h"
#include "recorder/log.h"
#include "recorder/recorder.h"

namespace ncclrec::recorder {

using format::acceptedResult;
using format::atomicField;

void Recorder::setProcessRank(int rank, int nranks) {
  format::BboxHeader* h = box_->header();
  int32_t unknown = -1;
  atomicField(h->global_rank).compare_exchange_strong(unknown, rank, std::memory_order_relaxed);
  unknown = -1;
  atomicField(h->world_size).compare_exchange_strong(unknown, nranks, std::memory_order_relaxed);
}

void Recorder::commCreated(const void* handle, const OpArgs& creator, uint64_t creator_event,
                           uint64_t parent_id, int color, int key, int result,
                           const DeviceIdentity& device, const char* name) {
  if (handle == nullptr || !acceptedResult(result)) return;
  setProcessRank(creator.rank, creator.nranks);
  CommInfo info;
  info.handle = handle;
  info.comm_id = creator.comm_id;
  info.parent_id = parent_id;
  info.rank = creator.rank;
  info.nranks = creator.nranks;
  info.device = device;
  info.global_rank = atomicField(box_->header()->global_rank).load(std::memory_order_relaxed);
  info.color = color;
  info.key = key;
  info.created_by = static_cast<uint16_t>(creator.op);
  info.init_result = result;
  info.created_ns = realtimeNs();
  info.event_index = creator_event;
  info.name = name;
  NCCLREC_TRACE(kLogInit, "comm %016llx (parent %016llx): rank %d of %d, device %d %s, by %s",
                static_cast<unsigned long long>(info.comm_id),
                static_cast<unsigned long long>(parent_id), info.rank, info.nranks, device.device,
                device.bus_id, std::string(format::opName(creator.op)).c_str());
  addComm(info);
}

void Recorder::commInitFailed(const OpArgs& creator, uint64_t creator_event, int result,
                              const DeviceIdentity& device) {
  // A rank outside [0, nranks) is the caller's bad argument, not an identity to adopt.
  if (creator.rank >= 0 && creator.rank < creator.nranks)
    setProcessRank(creator.rank, creator.nranks);
  CommInfo info;
  info.comm_id = creator.comm_id;
  info.rank = creator.rank;
  info.nranks = creator.nranks;
  info.device = device;
  info.global_rank = atomicField(box_->header()->global_rank).load(std::memory_order_relaxed);
  info.created_by = static_cast<uint16_t>(creator.op);
  info.init_result = result;
  info.state = format::kCommInitFailed;
  info.created_ns = realtimeNs();
  info.event_index = creator_event;
  NCCLREC_TRACE(kLogInit, "comm %016llx: init failed (%d) on rank %d of %d, device %d %s",
                static_cast<unsigned long long>(info.comm_id), result, info.rank, info.nranks,
                device.device, device.bus_id);
  addComm(info);
}

void Recorder::addComm(const CommInfo& info) {
  if (comms_->add(info) == nullptr) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true))
      NCCLREC_WARN(kLogInit, "more than NCCLREC_MAX_COMMS=%u communicators: later ones untracked",
                   params_.max_comms);
  }
}

DeviceIdentity Recorder::identifyDevice(int comm_device, HostncclGetDeviceFn hostnccl) const {
  return ncclrec::recorder::identifyDevice(comm_device, hostnccl, params_.cuda_library.c_str());
}

void Recorder::commEnded(const void* handle, uint32_t state_bits) {
  CommState* cs = comms_->find(handle);
  NCCLREC_TRACE(kLogInit, "comm %016llx: state bits 0x%x set",
                static_cast<unsigned long long>(cs != nullptr ? cs->comm_id : 0), state_bits);
  comms_->markEnded(cs, state_bits, realtimeNs());
}

uint32_t Recorder::nextSplitIndex(const void* parent) {
  CommState* cs = comms_->find(parent);
  return cs != nullptr ? cs->split_counter.fetch_add(1, std::memory_order_relaxed) : 0;
}

uint32_t Recorder::nextInitAllIndex() {
  return initall_calls_.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace ncclrec::recorder
