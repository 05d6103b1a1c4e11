// The CUDA context of each stream the record path has seen, remembered so that an op costs no
// cuStreamGetCtx / cuCtxGetCurrent once its stream is known (docs/gpu.md, "One driver call per
// op").
//
// Validity: nothing here notices a stream destroyed and its handle reused by a new stream of
// another context, or a thread whose current context changed (the default streams 0, 1 and 2 mean
// "of the calling thread's current context"). The caller finds out instead: cuEventRecord of an
// event of the remembered context on a stream of another context fails (CUDA_ERROR_INVALID_HANDLE),
// and the caller then asks the driver again and remember()s the answer. A reuse within the same
// context needs nothing: the context is all that is remembered.
//
// Threads: any. Lock-free, no allocation: a fixed open-addressing table of stream handles (an
// entry, once claimed, keeps its handle for the life of the object; its context may be replaced),
// and one thread-local context for the default streams.
#pragma once

#include <atomic>
#include <cstdint>

namespace ncclrec::recorder {

class StreamContexts {
 public:
  static constexpr uint32_t kCapacity = 256;  // distinct stream handles remembered
  static constexpr uint32_t kProbes = 16;     // entries tried per handle

  StreamContexts();
  StreamContexts(const StreamContexts&) = delete;
  StreamContexts& operator=(const StreamContexts&) = delete;

  // The remembered context of `stream`; nullptr when not known.
  void* find(void* stream) const;
  // Remembers `ctx` (not nullptr) for `stream`, replacing what was remembered. False when the
  // table has no room for a new handle: that stream is then resolved by the driver at every op.
  bool remember(void* stream, void* ctx);

  static bool isDefaultStream(void* stream) {
    return reinterpret_cast<uintptr_t>(stream) <= kLastDefaultStream;
  }

 private:
  static constexpr uintptr_t kLastDefaultStream = 2;  // 0 null, 1 legacy, 2 per-thread
  struct Entry {
    std::atomic<uintptr_t> stream{0};  // 0: free (0 is a default stream, never stored here)
    std::atomic<void*> ctx{nullptr};   // nullptr while being filled: read as unknown
  };
  static uint32_t home(uintptr_t stream);

  Entry entries_[kCapacity];
  const uint64_t id_;  // tells this object's thread-local entry from another's
};

}  // namespace ncclrec::recorder
