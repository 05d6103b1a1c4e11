// Writing and reading event slots of a black box ring (protocol in bbox_layout.h). Header-only:
// the writer side is on the record path and must inline.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>

#include "format/bbox_layout.h"

namespace ncclrec::format {

template <class T>
inline std::atomic_ref<T> atomicField(T& field) {
  return std::atomic_ref<T>(field);
}

inline Event* ringSlots(BboxHeader* header) {
  return reinterpret_cast<Event*>(reinterpret_cast<uint8_t*>(header) + header->ring_offset);
}
inline const Event* ringSlots(const BboxHeader* header) {
  return reinterpret_cast<const Event*>(reinterpret_cast<const uint8_t*>(header) +
                                        header->ring_offset);
}

// Claims the next event index and marks its slot as being written. The caller fills the slot
// (other than `seq`) and then calls publishEvent. Lock-free; one atomic add.
inline Event* claimEvent(BboxHeader* header, uint64_t* index_out) {
  const uint64_t index = atomicField(header->write_index).fetch_add(1, std::memory_order_relaxed);
  Event* slot = &ringSlots(header)[index & (header->ring_capacity - 1)];
  atomicField(slot->seq).store(2 * index + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  *index_out = index;
  return slot;
}

inline void publishEvent(Event* slot, uint64_t index) {
  atomicField(slot->seq).store(2 * index + 2, std::memory_order_release);
}

// True while `slot` still holds event `index` (not yet overwritten by a wrap).
inline bool slotHolds(const Event* slot, uint64_t index) {
  return atomicField(const_cast<uint64_t&>(slot->seq)).load(std::memory_order_acquire) ==
         2 * index + 2;
}

// Copies event `index` out of the ring. False when the slot holds another event (overwritten,
// or not yet written) or was being written during the copy. Live fields are loaded atomically.
// A seqlock read: the plain copy may overlap a writer reusing the slot, and the sequence word
// read again afterwards throws such a copy away. ThreadSanitizer cannot see that validation and
// reports the overlap (seen once in the shim tests under TSan), so the copy is not instrumented.
__attribute__((no_sanitize("thread"))) inline bool readEvent(const BboxHeader* header,
                                                             uint64_t index, Event* out) {
  const Event* slot = &ringSlots(header)[index & (header->ring_capacity - 1)];
  auto& seq = const_cast<uint64_t&>(slot->seq);
  const uint64_t before = atomicField(seq).load(std::memory_order_acquire);
  if (before != 2 * index + 2) return false;
  auto& s = const_cast<Event&>(*slot);
  out->comm_id = s.comm_id;
  out->op_seq = s.op_seq;
  out->count = s.count;
  out->stream = s.stream;
  out->enqueue_ns = s.enqueue_ns;
  out->stack_id = s.stack_id;
  out->comm_index = s.comm_index;
  out->rank = s.rank;
  out->nranks = s.nranks;
  out->peer = s.peer;
  out->redop = s.redop;
  out->tid = s.tid;
  out->op = s.op;
  out->dtype = s.dtype;
  out->group_depth = s.group_depth;
  out->flags = s.flags;
  out->aux = s.aux;
  out->aux2 = s.aux2;
  // Set after publication by the wrappers: the comm id of GetUniqueId, the creating call's device.
  out->aux64 = atomicField(s.aux64).load(std::memory_order_relaxed);
  out->device = atomicField(s.device).load(std::memory_order_relaxed);
  out->start_ns = atomicField(s.start_ns).load(std::memory_order_relaxed);
  out->end_ns = atomicField(s.end_ns).load(std::memory_order_relaxed);
  out->result = atomicField(s.result).load(std::memory_order_relaxed);
  out->state = atomicField(s.state).load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  const uint64_t after = atomicField(seq).load(std::memory_order_relaxed);
  out->seq = after;
  return after == before;
}

// Geometry of a black box for the given capacities; offsets are page aligned.
struct BboxGeometry {
  uint64_t ring_offset, comm_offset, stack_offset, module_offset, pycode_offset, pyblob_offset,
      threads_offset, links_offset, file_bytes;
};
inline uint64_t roundUpToPage(uint64_t n) { return (n + 4095) & ~uint64_t{4095}; }
// The Python regions (pycode_capacity records, pyblob_bytes of blob) and the thread snapshot
// region (thread_capacity records) and the link table (link_capacity records) are empty by
// default.
inline BboxGeometry computeGeometry(uint32_t ring_capacity, uint32_t comm_capacity,
                                    uint32_t stack_capacity, uint32_t stack_depth,
                                    uint32_t module_capacity, uint32_t pycode_capacity = 0,
                                    uint64_t pyblob_bytes = 0, uint32_t thread_capacity = 0,
                                    uint32_t link_capacity = 0) {
  BboxGeometry g{};
  g.ring_offset = kHeaderBytes;
  g.comm_offset = roundUpToPage(g.ring_offset + uint64_t{ring_capacity} * sizeof(Event));
  g.stack_offset = roundUpToPage(g.comm_offset + uint64_t{comm_capacity} * sizeof(CommRecord));
  g.module_offset =
      roundUpToPage(g.stack_offset + uint64_t{stack_capacity} * stackRecordBytes(stack_depth));
  g.pycode_offset =
      roundUpToPage(g.module_offset + uint64_t{module_capacity} * sizeof(ModuleRecord));
  g.pyblob_offset =
      roundUpToPage(g.pycode_offset + uint64_t{pycode_capacity} * sizeof(PyCodeRecord));
  g.threads_offset = roundUpToPage(g.pyblob_offset + pyblob_bytes);
  g.links_offset =
      roundUpToPage(g.threads_offset + uint64_t{thread_capacity} * sizeof(ThreadRecord));
  g.file_bytes = roundUpToPage(g.links_offset + uint64_t{link_capacity} * sizeof(LinkRecord));
  return g;
}

// Fills a zeroed header for a new black box with the given capacities (ring_capacity must be a
// power of two). Identity fields (pid, host, ...) are the caller's.
inline void initHeader(BboxHeader* h, uint32_t ring_capacity, uint32_t comm_capacity,
                       uint32_t stack_capacity, uint32_t stack_depth, uint32_t module_capacity,
                       uint32_t pycode_capacity = 0, uint64_t pyblob_bytes = 0,
                       uint32_t thread_capacity = 0, uint32_t link_capacity = 0) {
  const BboxGeometry g =
      computeGeometry(ring_capacity, comm_capacity, stack_capacity, stack_depth, module_capacity,
                      pycode_capacity, pyblob_bytes, thread_capacity, link_capacity);
  std::memcpy(h->magic, kBboxMagic, sizeof(kBboxMagic));
  h->version = kBboxVersion;
  h->header_bytes = kHeaderBytes;
  h->event_bytes = sizeof(Event);
  h->comm_bytes = sizeof(CommRecord);
  h->stack_bytes = static_cast<uint32_t>(stackRecordBytes(stack_depth));
  h->module_bytes = sizeof(ModuleRecord);
  h->file_bytes = g.file_bytes;
  h->ring_offset = g.ring_offset;
  h->comm_offset = g.comm_offset;
  h->stack_offset = g.stack_offset;
  h->module_offset = g.module_offset;
  h->ring_capacity = ring_capacity;
  h->comm_capacity = comm_capacity;
  h->stack_capacity = stack_capacity;
  h->stack_depth = stack_depth;
  h->module_capacity = module_capacity;
  h->global_rank = -1;
  h->world_size = -1;
  h->local_rank = -1;
  h->hang_event_index = -1;
  if (pycode_capacity > 0) {
    h->pycode_offset = g.pycode_offset;
    h->pycode_bytes = sizeof(PyCodeRecord);
    h->pycode_capacity = pycode_capacity;
    h->pyblob_offset = g.pyblob_offset;
    h->pyblob_bytes = pyblob_bytes;
  }
  if (thread_capacity > 0) {
    h->threads_offset = g.threads_offset;
    h->thread_bytes = sizeof(ThreadRecord);
    h->thread_capacity = thread_capacity;
  }
  if (link_capacity > 0) {
    h->links_offset = g.links_offset;
    h->link_bytes = sizeof(LinkRecord);
    h->link_capacity = link_capacity;
  }
}

inline CommRecord* commRecords(BboxHeader* h) {
  return reinterpret_cast<CommRecord*>(reinterpret_cast<uint8_t*>(h) + h->comm_offset);
}
inline const CommRecord* commRecords(const BboxHeader* h) {
  return reinterpret_cast<const CommRecord*>(reinterpret_cast<const uint8_t*>(h) + h->comm_offset);
}
inline StackRecord* stackRecord(BboxHeader* h, uint32_t i) {
  return reinterpret_cast<StackRecord*>(reinterpret_cast<uint8_t*>(h) + h->stack_offset +
                                        uint64_t{i} * h->stack_bytes);
}
inline const StackRecord* stackRecord(const BboxHeader* h, uint32_t i) {
  return reinterpret_cast<const StackRecord*>(reinterpret_cast<const uint8_t*>(h) +
                                              h->stack_offset + uint64_t{i} * h->stack_bytes);
}
inline ModuleRecord* moduleRecords(BboxHeader* h) {
  return reinterpret_cast<ModuleRecord*>(reinterpret_cast<uint8_t*>(h) + h->module_offset);
}
inline const ModuleRecord* moduleRecords(const BboxHeader* h) {
  return reinterpret_cast<const ModuleRecord*>(reinterpret_cast<const uint8_t*>(h) +
                                               h->module_offset);
}

inline PyCodeRecord* pyCodeRecords(BboxHeader* h) {
  return reinterpret_cast<PyCodeRecord*>(reinterpret_cast<uint8_t*>(h) + h->pycode_offset);
}
inline const PyCodeRecord* pyCodeRecords(const BboxHeader* h) {
  return reinterpret_cast<const PyCodeRecord*>(reinterpret_cast<const uint8_t*>(h) +
                                               h->pycode_offset);
}
inline uint8_t* pyBlob(BboxHeader* h) { return reinterpret_cast<uint8_t*>(h) + h->pyblob_offset; }
inline const uint8_t* pyBlob(const BboxHeader* h) {
  return reinterpret_cast<const uint8_t*>(h) + h->pyblob_offset;
}

inline ThreadRecord* threadRecords(BboxHeader* h) {
  return reinterpret_cast<ThreadRecord*>(reinterpret_cast<uint8_t*>(h) + h->threads_offset);
}
inline const ThreadRecord* threadRecords(const BboxHeader* h) {
  return reinterpret_cast<const ThreadRecord*>(reinterpret_cast<const uint8_t*>(h) +
                                               h->threads_offset);
}

inline LinkRecord* linkRecords(BboxHeader* h) {
  return reinterpret_cast<LinkRecord*>(reinterpret_cast<uint8_t*>(h) + h->links_offset);
}
inline const LinkRecord* linkRecords(const BboxHeader* h) {
  return reinterpret_cast<const LinkRecord*>(reinterpret_cast<const uint8_t*>(h) + h->links_offset);
}

}  // namespace ncclrec::format
