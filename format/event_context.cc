#include "format/event_context.h"

#include <mutex>
#include <new>
#include <unordered_map>

namespace ncclrec::format::event_contexts {

std::atomic<const EventContext*> chunks[kChunks];

namespace {

struct Hash {
  size_t operator()(const EventContext& c) const {
    uint64_t h = c.comm_id * 0x9e3779b97f4a7c15ull;
    for (uint64_t v : {c.stream, static_cast<uint64_t>(static_cast<uint32_t>(c.enqueue_hi)),
                       static_cast<uint64_t>(static_cast<uint32_t>(c.start_hi)),
                       static_cast<uint64_t>(static_cast<uint32_t>(c.end_hi)),
                       static_cast<uint64_t>(static_cast<uint32_t>(c.rank)),
                       static_cast<uint64_t>(static_cast<uint32_t>(c.nranks)),
                       static_cast<uint64_t>(static_cast<uint32_t>(c.peer)),
                       static_cast<uint64_t>(static_cast<uint32_t>(c.device)), uint64_t{c.tid},
                       uint64_t{c.comm_index}, uint64_t{c.stack_id}}) {
      h = (h ^ v) * 0x100000001b3ull;
    }
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

struct Table {
  std::mutex mu;
  std::unordered_map<EventContext, uint32_t, Hash> ids;
  uint64_t count = 0;
  EventContext* chunk = nullptr;  // the newest chunk, being filled

  Table() { add(EventContext{}); }
  // Caller holds mu (or is the constructor).
  uint32_t add(const EventContext& c) {
    if (count >> 32 != 0) throw std::bad_alloc();  // 2^32 contexts: far past any memory
    const auto id = static_cast<uint32_t>(count);
    if ((id & kChunkMask) == 0) {
      chunk = new EventContext[size_t{1} << kChunkBits];
      chunks[id >> kChunkBits].store(chunk, std::memory_order_release);
    }
    chunk[id & kChunkMask] = c;
    ids.emplace(c, id);
    ++count;
    return id;
  }
};

Table& table() {
  static Table* t = new Table();  // never destroyed: events may outlive static destruction
  return *t;
}

// Id 0 exists before any EventRecord is built.
const bool kSeeded = (table(), true);

}  // namespace

uint32_t intern(const EventContext& c) {
  // Consecutive calls of one loader mostly repeat the previous context.
  thread_local EventContext last;
  thread_local uint32_t last_id = 0;
  if (c == last) return last_id;
  Table& t = table();
  uint32_t id = 0;
  {
    std::lock_guard<std::mutex> lock(t.mu);
    const auto it = t.ids.find(c);
    id = it != t.ids.end() ? it->second : t.add(c);
  }
  last = c;
  last_id = id;
  return id;
}

size_t size() {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  return static_cast<size_t>(t.count);
}

}  // namespace ncclrec::format::event_contexts
