#include "recorder/comm_table.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "format/bbox_ring.h"

namespace ncclrec::recorder {
namespace {

constexpr uint64_t kFnvOffset = 1469598103934665603ull;
constexpr uint64_t kFnvPrime = 1099511628211ull;

uint64_t fnv(uint64_t h, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * kFnvPrime;
  return h;
}

uint64_t mix(uint64_t x) {  // splitmix64 finalizer: spreads FNV's low-entropy high bits
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x == 0 ? 1 : x;
}

template <class... T>
uint64_t hashOf(uint64_t seed, const T&... values) {
  uint64_t h = seed;
  ((h = fnv(h, &values, sizeof(values))), ...);
  return mix(h);
}

uintptr_t hashHandle(uintptr_t h) { return static_cast<uintptr_t>(mix(h)); }

}  // namespace

uint64_t commIdFromUniqueIds(const void* ids, size_t bytes) {
  return mix(fnv(kFnvOffset, ids, bytes));
}

uint64_t commIdForSplit(uint64_t parent_id, uint32_t split_index, int color) {
  return hashOf(kFnvOffset ^ 0x5350u, parent_id, split_index, color);
}

uint64_t commIdForShrink(uint64_t parent_id, uint32_t split_index, const int* excluded, int n) {
  std::vector<int> sorted(excluded, excluded + std::max(0, n));
  std::sort(sorted.begin(), sorted.end());
  uint64_t h = fnv(kFnvOffset ^ 0x5348u, &parent_id, sizeof(parent_id));
  h = fnv(h, &split_index, sizeof(split_index));
  if (!sorted.empty()) h = fnv(h, sorted.data(), sorted.size() * sizeof(int));
  return mix(h);
}

uint64_t commIdForInitAll(int pid, uint32_t call_index, int ndev) {
  return hashOf(kFnvOffset ^ 0x4941u, pid, call_index, ndev);
}

CommTable::CommTable(format::BboxHeader* header, uint32_t capacity)
    : header_(header), capacity_(capacity) {
  uint32_t slots = 16;
  while (slots < 2 * capacity) slots <<= 1;
  mask_ = slots - 1;
  slots_ = std::make_unique<Slot[]>(slots);
  states_ = std::make_unique<std::unique_ptr<CommState>[]>(capacity);
}

CommTable::~CommTable() = default;

namespace {

// What the creating call's arguments say: written before the record is published.
void fillIdentity(format::CommRecord* rec, const CommInfo& info) {
  rec->comm_id = info.comm_id;
  rec->parent_id = info.parent_id;
  rec->rank = info.rank;
  rec->nranks = info.nranks;
  rec->global_rank = info.global_rank;
  rec->color = info.color;
  rec->key = info.key;
  rec->created_by = info.created_by;
  rec->created_ns = info.created_ns;
  rec->event_index_lo = static_cast<uint32_t>(info.event_index);
  if (info.name != nullptr) strncpy(rec->name, info.name, sizeof(rec->name) - 1);
  rec->root_family = info.root.family;
  rec->root_port = info.root.port;
  memcpy(rec->root_addr, info.root.addr, sizeof(rec->root_addr));
  rec->blocking = info.blocking;
}

// What the call's return says: written before its state bit (or the record) is published.
void fillOutcome(format::CommRecord* rec, const CommInfo& info) {
  rec->handle = reinterpret_cast<uintptr_t>(info.handle);
  rec->rank = info.rank;
  rec->nranks = info.nranks;
  rec->device = info.device.device;
  memcpy(rec->bus_id, info.device.bus_id, sizeof(rec->bus_id));
  rec->bus_id[sizeof(rec->bus_id) - 1] = '\0';
  memcpy(rec->uuid, info.device.uuid, sizeof(rec->uuid));
  rec->device_source = info.device.source;
  rec->init_result = info.init_result;
}

}  // namespace

uint32_t CommTable::beginCreation(const CommInfo& info) {
  std::lock_guard<std::mutex> lock(add_mutex_);
  const uint32_t index = format::atomicField(header_->comm_count).load(std::memory_order_relaxed);
  if (index >= capacity_ || index >= header_->comm_capacity) return format::kNoComm;
  format::CommRecord* rec = &format::commRecords(header_)[index];
  memset(rec, 0, sizeof(*rec));
  fillIdentity(rec, info);
  rec->device = -1;
  rec->state = format::kCommCreating;
  format::atomicField(rec->valid).store(format::kValidMark, std::memory_order_release);
  format::atomicField(header_->comm_count).store(index + 1, std::memory_order_release);
  return index;
}

void CommTable::settleCreation(CommState* comm, bool ok) {
  if (comm == nullptr || comm->record == nullptr || !comm->creating.exchange(false)) return;
  format::atomicField(comm->record->state)
      .fetch_or(ok ? format::kCommInitialized : format::kCommInitFailed, std::memory_order_release);
}

CommState* CommTable::add(const CommInfo& info) {
  std::lock_guard<std::mutex> lock(add_mutex_);
  const uint32_t count = format::atomicField(header_->comm_count).load(std::memory_order_relaxed);
  const bool claimed = info.record != format::kNoComm && info.record < count;
  const uint32_t index = claimed ? info.record : count;
  if (index >= capacity_ || index >= header_->comm_capacity) return nullptr;
  auto state = std::make_unique<CommState>();
  state->index = index;
  state->comm_id = info.comm_id;
  state->rank = info.rank;
  state->nranks = info.nranks;
  state->device = info.device.device;
  // A failed init's nranks is whatever the caller passed (maybe absurd): allocate nothing for it.
  if (info.handle != nullptr && info.nranks > 0) {
    state->send_seq = std::make_unique<std::atomic<uint64_t>[]>(info.nranks);
    state->recv_seq = std::make_unique<std::atomic<uint64_t>[]>(info.nranks);
  }
  format::CommRecord* rec = &format::commRecords(header_)[index];
  if (claimed) {
    // Published at the start of the call: the outcome, then its state bit (release).
    fillOutcome(rec, info);
    state->creating.store(info.state == 0, std::memory_order_relaxed);
    format::atomicField(rec->state).fetch_or(info.state, std::memory_order_release);
  } else {
    memset(rec, 0, sizeof(*rec));
    fillIdentity(rec, info);
    fillOutcome(rec, info);
    rec->state = info.state;
    format::atomicField(rec->valid).store(format::kValidMark, std::memory_order_release);
    format::atomicField(header_->comm_count).store(index + 1, std::memory_order_release);
  }
  state->record = rec;

  CommState* raw = state.get();
  states_[index] = std::move(state);
  const auto key = reinterpret_cast<uintptr_t>(info.handle);
  if (key == 0) return raw;  // 0 marks an empty slot of the map
  for (uint32_t i = hashHandle(key) & mask_;; i = (i + 1) & mask_) {
    const uintptr_t k = slots_[i].key.load(std::memory_order_acquire);
    if (k == key || k == 0) {
      // Value first, then key: a reader that finds the key finds a value.
      slots_[i].value.store(raw, std::memory_order_release);
      slots_[i].key.store(key, std::memory_order_release);
      break;
    }
  }
  return raw;
}

CommState* CommTable::find(const void* handle) const {
  const auto key = reinterpret_cast<uintptr_t>(handle);
  if (key == 0) return nullptr;
  for (uint32_t i = hashHandle(key) & mask_, probes = 0; probes <= mask_;
       i = (i + 1) & mask_, ++probes) {
    const uintptr_t k = slots_[i].key.load(std::memory_order_acquire);
    if (k == key) return slots_[i].value.load(std::memory_order_acquire);
    if (k == 0) return nullptr;
  }
  return nullptr;
}

void CommTable::markEnded(CommState* comm, uint32_t state_bits, int64_t now_ns) {
  if (comm == nullptr || comm->record == nullptr) return;
  format::atomicField(comm->record->state).fetch_or(state_bits, std::memory_order_relaxed);
  int64_t expected = 0;
  format::atomicField(comm->record->ended_ns)
      .compare_exchange_strong(expected, now_ns, std::memory_order_relaxed);
}

}  // namespace ncclrec::recorder
