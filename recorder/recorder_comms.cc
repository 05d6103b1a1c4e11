// Recorder's communicator bookkeeping (recorder.h): the process's rank from its first
// communicator, created, failed and ended communicators, split and init-all counters. Called by
// the wrappers on the calling thread; nothing here is on the per-collective record path.
#include <atomic>
#include <string>

#include "format/bbox_ring.h"
#include "format/nccl_result.h"
#include "recorder/clock.h"
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

namespace {

CommInfo creationInfo(const OpArgs& creator, uint64_t creator_event, const CreationArgs& args,
                      int global_rank) {
  CommInfo info;
  info.comm_id = creator.comm_id;
  info.parent_id = args.parent_id;
  info.rank = creator.rank;
  info.nranks = creator.nranks;
  info.global_rank = global_rank;
  info.color = args.color;
  info.key = args.key;
  info.created_by = static_cast<uint16_t>(creator.op);
  info.created_ns = realtimeNs();
  info.event_index = creator_event;
  info.name = args.name;
  info.root = args.root;
  info.blocking = args.blocking;
  return info;
}

}  // namespace

uint32_t Recorder::commCreating(const OpArgs& creator, uint64_t creator_event,
                                const CreationArgs& args) {
  // A process hanging in its first creation is known by the rank it asked for (a rank outside
  // [0, nranks) is the caller's bad argument, not an identity to adopt).
  if (creator.rank >= 0 && creator.rank < creator.nranks)
    setProcessRank(creator.rank, creator.nranks);
  const int global = atomicField(box_->header()->global_rank).load(std::memory_order_relaxed);
  const uint32_t record = comms_->beginCreation(creationInfo(creator, creator_event, args, global));
  NCCLREC_TRACE(kLogInit, "comm %016llx: %s begins (rank %d of %d), record %u",
                static_cast<unsigned long long>(creator.comm_id),
                std::string(format::opName(creator.op)).c_str(), creator.rank, creator.nranks,
                record);
  return record;
}

void Recorder::commCreated(const void* handle, const OpArgs& creator, CallHandle& call,
                           const CreationArgs& args, int result, const DeviceIdentity& device,
                           uint32_t record) {
  if (handle == nullptr || !acceptedResult(result)) return;
  setProcessRank(creator.rank, creator.nranks);
  CommInfo info =
      creationInfo(creator, call.index, args,
                   atomicField(box_->header()->global_rank).load(std::memory_order_relaxed));
  info.handle = handle;
  info.device = device;
  info.init_result = result;
  info.record = record;
  // A nonblocking creation is under way until the user's polling sees it settle; one inside a
  // group, until the group's end.
  const bool pending = result == format::kNcclInProgress || inGroup();
  info.state = pending ? 0 : format::kCommInitialized;
  NCCLREC_TRACE(kLogInit, "comm %016llx (parent %016llx): rank %d of %d, device %d %s, by %s%s",
                static_cast<unsigned long long>(info.comm_id),
                static_cast<unsigned long long>(args.parent_id), info.rank, info.nranks,
                device.device, device.bus_id, std::string(format::opName(creator.op)).c_str(),
                pending ? " (in progress)" : "");
  CommState* cs = addComm(info);
  // end() holds the creating call in the new communicator's queue (ncclInProgress).
  if (pending && cs != nullptr) call.comm = cs;
}

void Recorder::commInitFailed(const OpArgs& creator, uint64_t creator_event, int result,
                              const DeviceIdentity& device, uint32_t record) {
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
  info.record = record;
  NCCLREC_TRACE(kLogInit, "comm %016llx: init failed (%d) on rank %d of %d, device %d %s",
                static_cast<unsigned long long>(info.comm_id), result, info.rank, info.nranks,
                device.device, device.bus_id);
  addComm(info);
}

CommState* Recorder::addComm(const CommInfo& info) {
  CommState* cs = comms_->add(info);
  if (cs == nullptr) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true))
      NCCLREC_WARN(kLogInit, "more than NCCLREC_MAX_COMMS=%u communicators: later ones untracked",
                   params_.max_comms);
  }
  return cs;
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
