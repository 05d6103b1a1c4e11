// The fields of a recorded call that repeat from call to call (its communicator, rank, stream,
// thread, call stack, peer and the high bits of its timestamps), interned once per process in a
// table shared by every loaded recording: an EventRecord (model.h) holds a 32-bit id into it. At
// fleet scale (100,000 ranks x 2,000 calls) a handful of contexts per rank replace 40 bytes per
// call. The table only grows (a context is never freed); reads are lock-free, interning takes a
// lock, so recordings load on several threads at once.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace ncclrec::format {

struct EventContext {
  uint64_t comm_id = 0;
  uint64_t stream = 0;
  // The timestamps' bits 40..63 (arithmetic shift): a context spans 2^40 ns (18 minutes).
  int32_t enqueue_hi = 0;
  int32_t start_hi = 0;
  int32_t end_hi = 0;
  int32_t rank = -1;
  int32_t nranks = 0;
  int32_t peer = -1;
  int32_t device = -1;
  uint32_t tid = 0;
  uint32_t comm_index = 0xffffffffu;
  uint32_t stack_id = 0xffffffffu;
  bool operator==(const EventContext&) const = default;
};

namespace event_contexts {

constexpr unsigned kChunkBits = 16;
constexpr uint32_t kChunkMask = (1u << kChunkBits) - 1;
constexpr size_t kChunks = size_t{1} << (32 - kChunkBits);
// Chunk i holds the contexts with ids i << kChunkBits onwards; published before any of its ids
// is handed out. Id 0 is the default EventContext.
extern std::atomic<const EventContext*> chunks[kChunks];

// The id of `c`, the same for equal contexts; allocates (std::bad_alloc) the first time.
uint32_t intern(const EventContext& c);
// How many distinct contexts exist (for tests and measurements).
size_t size();

inline const EventContext& at(uint32_t id) {
  return chunks[id >> kChunkBits].load(std::memory_order_acquire)[id & kChunkMask];
}

}  // namespace event_contexts
}  // namespace ncclrec::format
