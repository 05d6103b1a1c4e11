// The streams that hold a pending op, rebuilt by the watchdog at every poll of CUDA markers: an
// op whose stream holds no earlier pending op is started (a communicator's kernels run one after
// the other on its stream). Watchdog thread only; no allocation after construction.
#pragma once

#include <cstdint>

namespace ncclrec::recorder {

class BusyStreams {
 public:
  static constexpr uint32_t kCapacity = 1024;  // power of two

  // Forgets every stream (a new poll).
  void clear() {
    ++pass_;
    full_ = false;
  }
  // A stream is a handle in a context: the default streams are one per context.
  bool contains(void* stream, void* ctx) const {
    if (full_) return true;  // too many streams to tell: nothing is inferred started
    for (uint32_t i = 0, at = home(stream, ctx); i < kCapacity; ++i, at = (at + 1) % kCapacity) {
      const Entry& e = entries_[at];
      if (e.pass != pass_) return false;
      if (e.stream == stream && e.ctx == ctx) return true;
    }
    return false;
  }
  void insert(void* stream, void* ctx) {
    for (uint32_t i = 0, at = home(stream, ctx); i < kCapacity; ++i, at = (at + 1) % kCapacity) {
      Entry& e = entries_[at];
      if (e.pass != pass_) {
        e = {stream, ctx, pass_};
        return;
      }
      if (e.stream == stream && e.ctx == ctx) return;
    }
    full_ = true;
  }

 private:
  struct Entry {
    void* stream = nullptr;
    void* ctx = nullptr;
    uint64_t pass = 0;  // entries of an earlier pass are free
  };
  static uint32_t home(void* stream, void* ctx) {
    const uint64_t h =
        (reinterpret_cast<uintptr_t>(stream) ^ (reinterpret_cast<uintptr_t>(ctx) >> 4)) *
        0x9E3779B97F4A7C15ull;
    return static_cast<uint32_t>(h >> 54) % kCapacity;
  }

  Entry entries_[kCapacity];
  uint64_t pass_ = 1;
  bool full_ = false;
};

}  // namespace ncclrec::recorder
