#include "recorder/stream_contexts.h"

namespace ncclrec::recorder {
namespace {

std::atomic<uint64_t> next_id{1};

// The default streams' context on this thread, for the StreamContexts object `owner`.
struct ThreadDefault {
  uint64_t owner = 0;
  void* ctx = nullptr;
};
// initial-exec, as the record path's other thread-locals: no __tls_get_addr call per op.
thread_local ThreadDefault tls_default __attribute__((tls_model("initial-exec")));

}  // namespace

StreamContexts::StreamContexts() : id_(next_id.fetch_add(1, std::memory_order_relaxed)) {}

uint32_t StreamContexts::home(uintptr_t stream) {
  // Handles are heap addresses: the low bits carry little, a multiplicative hash spreads them.
  return static_cast<uint32_t>((stream * 0x9E3779B97F4A7C15ull) >> 56) & (kCapacity - 1);
}

void* StreamContexts::find(void* stream) const {
  if (isDefaultStream(stream)) return tls_default.owner == id_ ? tls_default.ctx : nullptr;
  const auto key = reinterpret_cast<uintptr_t>(stream);
  for (uint32_t i = 0, at = home(key); i < kProbes; ++i, at = (at + 1) & (kCapacity - 1)) {
    const uintptr_t held = entries_[at].stream.load(std::memory_order_acquire);
    if (held == key) return entries_[at].ctx.load(std::memory_order_acquire);
    if (held == 0) return nullptr;
  }
  return nullptr;
}

bool StreamContexts::remember(void* stream, void* ctx) {
  if (isDefaultStream(stream)) {
    tls_default = {id_, ctx};
    return true;
  }
  const auto key = reinterpret_cast<uintptr_t>(stream);
  for (uint32_t i = 0, at = home(key); i < kProbes; ++i, at = (at + 1) & (kCapacity - 1)) {
    uintptr_t held = entries_[at].stream.load(std::memory_order_acquire);
    if (held == 0 &&
        entries_[at].stream.compare_exchange_strong(held, key, std::memory_order_acq_rel)) {
      held = key;
    }
    if (held == key) {
      entries_[at].ctx.store(ctx, std::memory_order_release);
      return true;
    }
  }
  return false;
}

}  // namespace ncclrec::recorder
