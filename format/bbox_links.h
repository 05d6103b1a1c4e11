// Writing and reading a black box's link table (LinkRecord, protocol in bbox_layout.h).
// Header-only: the writer side runs on the record path (the profiler plugin's proxy callbacks,
// once per step) and must inline: no allocation, lock or log; a few relaxed atomic adds.
#pragma once

#include <atomic>
#include <cstdint>

#include "format/bbox_layout.h"
#include "format/bbox_ring.h"

namespace ncclrec::format {

inline uint32_t linkHash(uint32_t comm_index, int channel, int peer, bool is_send) {
  uint64_t k = (uint64_t{comm_index} << 32) ^ (uint64_t{static_cast<uint32_t>(peer)} << 9) ^
               (uint64_t{static_cast<uint8_t>(channel)} << 1) ^ (is_send ? 1u : 0u);
  k *= 0x9e3779b97f4a7c15ull;
  return static_cast<uint32_t>(k >> 32);
}

inline bool linkKeyIs(const LinkRecord& r, uint32_t comm_index, int channel, int peer,
                      bool is_send) {
  return r.comm_index == comm_index && r.peer == peer && r.channel == channel &&
         (r.is_send != 0) == is_send;
}

// The record of one connection, claimed on first use; nullptr when the process keeps no link
// table or the table is full (counted in links_dropped). A slot another thread is claiming is
// waited for briefly, then passed over: at worst a connection gets two records, which readers
// add up (mergeLinks).
inline LinkRecord* findOrClaimLink(BboxHeader* h, uint32_t comm_index, int channel, int peer,
                                   bool is_send) {
  const uint32_t cap = h->link_capacity;
  if (cap == 0) return nullptr;
  LinkRecord* table = linkRecords(h);
  const uint32_t start = linkHash(comm_index, channel, peer, is_send) % cap;
  for (uint32_t probe = 0; probe < cap; ++probe) {
    LinkRecord& r = table[(start + probe) % cap];
    uint32_t valid = atomicField(r.valid).load(std::memory_order_acquire);
    if (valid == 0) {
      if (atomicField(r.valid).compare_exchange_strong(valid, kClaimingMark,
                                                       std::memory_order_acq_rel)) {
        r.comm_index = comm_index;
        r.peer = peer;
        r.channel = static_cast<uint8_t>(channel);
        r.is_send = is_send ? 1 : 0;
        atomicField(r.op_event_index).store(kNoLinkOp, std::memory_order_relaxed);
        atomicField(h->link_count).fetch_add(1, std::memory_order_relaxed);
        atomicField(r.valid).store(kValidMark, std::memory_order_release);
        return &r;
      }
      // Lost the race: `valid` now holds the winner's mark.
    }
    for (int spin = 0; valid == kClaimingMark && spin < 1024; ++spin) {
      valid = atomicField(r.valid).load(std::memory_order_acquire);
    }
    if (valid == kValidMark && linkKeyIs(r, comm_index, channel, peer, is_send)) return &r;
  }
  atomicField(h->links_dropped).fetch_add(1, std::memory_order_relaxed);
  return nullptr;
}

// A proxy operation of `steps` steps begins on the connection, for the NCCL call recorded at ring
// index `event_index` (kNoLinkOp when unknown).
inline void linkOpStarted(LinkRecord* r, uint64_t event_index, int steps, int64_t now_ns) {
  const uint32_t n = steps > 0 ? static_cast<uint32_t>(steps) : 0;
  const uint64_t before = atomicField(r->planned).fetch_add(n, std::memory_order_relaxed);
  atomicField(r->op_base).store(static_cast<uint32_t>(before), std::memory_order_relaxed);
  atomicField(r->op_steps).store(n, std::memory_order_relaxed);
  atomicField(r->op_start_ns).store(now_ns, std::memory_order_relaxed);
  atomicField(r->op_event_index).store(event_index, std::memory_order_release);
}

inline void linkCount(uint64_t& counter, int64_t& when, int64_t now_ns) {
  atomicField(counter).fetch_add(1, std::memory_order_relaxed);
  atomicField(when).store(now_ns, std::memory_order_relaxed);
}
inline void linkStepPosted(LinkRecord* r, int64_t now_ns) {
  linkCount(r->posted, r->posted_ns, now_ns);
}
inline void linkStepMoved(LinkRecord* r, int64_t now_ns) {
  linkCount(r->moved, r->moved_ns, now_ns);
}
inline void linkStepDone(LinkRecord* r, int64_t now_ns) { linkCount(r->done, r->done_ns, now_ns); }

// The communicator's kernel record (kKernelPeer): an op launched with `channels` kernel channels,
// one of them started on the GPU, one stopped.
inline LinkRecord* findOrClaimKernelRecord(BboxHeader* h, uint32_t comm_index) {
  return findOrClaimLink(h, comm_index, 0, kKernelPeer, false);
}
inline void kernelOpLaunched(LinkRecord* r, uint64_t event_index, int channels, int64_t now_ns) {
  linkOpStarted(r, event_index, channels, now_ns);
}
inline void kernelChannelStarted(LinkRecord* r, int64_t now_ns) { linkStepPosted(r, now_ns); }
inline void kernelChannelStopped(LinkRecord* r, int64_t now_ns) { linkStepDone(r, now_ns); }

// Copies a published record with atomic loads; false for a slot not (yet) published.
inline bool readLink(const LinkRecord& src, LinkRecord* out) {
  auto& s = const_cast<LinkRecord&>(src);
  if (atomicField(s.valid).load(std::memory_order_acquire) != kValidMark) return false;
  out->valid = kValidMark;
  out->comm_index = s.comm_index;
  out->peer = s.peer;
  out->channel = s.channel;
  out->is_send = s.is_send;
  out->op_event_index = atomicField(s.op_event_index).load(std::memory_order_acquire);
  out->op_steps = atomicField(s.op_steps).load(std::memory_order_relaxed);
  out->op_base = atomicField(s.op_base).load(std::memory_order_relaxed);
  out->planned = atomicField(s.planned).load(std::memory_order_relaxed);
  out->posted = atomicField(s.posted).load(std::memory_order_relaxed);
  out->moved = atomicField(s.moved).load(std::memory_order_relaxed);
  out->done = atomicField(s.done).load(std::memory_order_relaxed);
  out->op_start_ns = atomicField(s.op_start_ns).load(std::memory_order_relaxed);
  out->posted_ns = atomicField(s.posted_ns).load(std::memory_order_relaxed);
  out->moved_ns = atomicField(s.moved_ns).load(std::memory_order_relaxed);
  out->done_ns = atomicField(s.done_ns).load(std::memory_order_relaxed);
  return true;
}

}  // namespace ncclrec::format
