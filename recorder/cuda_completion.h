// Completion tracking on CUDA streams: an NCCL call returns once its work is enqueued, so the
// recorder records a CUDA event on the call's stream after the call (the end marker) and the
// watchdog polls it (enqueued -> started -> completed). A GPU hang is an op whose end marker never
// completes. "Started" is inferred: a communicator's kernels run one after the other on a stream,
// so an op is started once no earlier op on its stream is pending. Markers::kStartAndEnd
// (NCCLREC_COMPLETION=cuda-full) also records a start marker before the call and takes "started"
// from it.
//
// The CUDA driver is opened with dlopen (RTLD_LOCAL) at create(); nothing links libcuda. Events
// come from a fixed pool of slots; a slot's events are created (CU_EVENT_DISABLE_TIMING) the first
// time the slot is used in a context and kept for reuse in that context. Each stream's context is
// remembered (stream_contexts.h), so after warm-up an op costs one driver call, cuEventRecord of
// its end marker (two with start markers), and no allocation, lock or logging of our own.
//
// Graph capture costs no call on the record path: a plain cuEventRecord on a capturing stream
// is legal and adds no node to the graph (only CU_EVENT_RECORD_EXTERNAL would), and cuEventQuery
// of such an event answers CUDA_ERROR_CAPTURED_EVENT, so the watchdog learns at its next poll that
// the op was captured (Sink::captured) instead of asking cuStreamIsCapturing per op.
//
// Threads: beforeCall/afterCall from any thread; poll from one thread at a time (the watchdog).
// Ownership of a slot moves with atomics: the calling thread owns it from beforeCall to
// afterCall, the watchdog from the hand-off until it recycles the slot.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "recorder/cuda_driver.h"
#include "recorder/stream_contexts.h"

namespace ncclrec::recorder {

class BusyStreams;

class CudaCompletion {
 public:
  static constexpr uint32_t kDefaultMaxPending = 65536;
  static constexpr uint32_t kMaxMaxPending = 1u << 24;
  static constexpr const char* kDefaultLibrary = "libcuda.so.1";
  // Environment variable naming the driver library to dlopen instead of kDefaultLibrary: the
  // table's NCCLREC_CUDA_LIBRARY (format/params_table.h), whose default is
  // kDefaultLibrary.
  static constexpr const char* kLibraryEnv = "NCCLREC_CUDA_LIBRARY";

  // Markers per op: kEnd (NCCLREC_COMPLETION=cuda), or kStartAndEnd (cuda-full) where the start
  // of an op must be seen rather than inferred, at the cost of a second driver call.
  enum class Markers { kEnd, kStartAndEnd };

  // Receives what poll() observes. Timestamps are CLOCK_REALTIME at the poll that saw the change.
  struct Sink {
    virtual void started(uint64_t event_index, int64_t now_ns) = 0;
    virtual void completed(uint64_t event_index, int64_t now_ns) = 0;
    // The driver answered an event query with an error (a sticky error such as an illegal
    // address, or the context was destroyed): completion of this op can no longer be observed.
    // The slot is recycled. Ignoring it leaves the op incomplete, which the watchdog will
    // eventually report as a hang.
    virtual void lost(uint64_t event_index, int cu_result, int64_t now_ns) {}
    // The op was issued on a stream capturing a CUDA graph: its work runs when the graph is
    // launched, which this call cannot observe; as far as the call goes it is done. The slot is
    // recycled.
    virtual void captured(uint64_t event_index, int64_t now_ns) { completed(event_index, now_ns); }
    virtual ~Sink() = default;
  };

  // Opens the library named by $NCCLREC_CUDA_LIBRARY, or kDefaultLibrary when unset or empty.
  static std::unique_ptr<CudaCompletion> create(uint32_t max_pending, std::string* why_not,
                                                Markers markers = Markers::kEnd);
  // Opens `library` (kDefaultLibrary when null or empty), resolves the driver entry points,
  // calls cuInit(0). max_pending bounds ops in flight at once: a power of two in
  // [1, kMaxMaxPending]. Returns nullptr and a one-line reason when any step fails.
  static std::unique_ptr<CudaCompletion> create(uint32_t max_pending, const char* library,
                                                std::string* why_not,
                                                Markers markers = Markers::kEnd);

  // Destroys the pooled events. Call it only while the driver is usable (not from a static
  // destructor after the CUDA runtime has torn down) and while no other thread uses this object.
  // The library stays loaded: unloading libcuda under a live process is not safe.
  ~CudaCompletion();
  CudaCompletion(const CudaCompletion&) = delete;
  CudaCompletion& operator=(const CudaCompletion&) = delete;

  // Record path, before the NCCL call: claims a slot with events of the context of `stream` (a
  // CUstream; 0, 1 and 2 are the legacy and per-thread default streams and use the calling
  // thread's current context) and, with kStartAndEnd, records the start marker. Returns a ticket
  // >= 0, or -1 when there is no free slot, the stream has no context, or the driver failed: the
  // caller then uses host completion for this op.
  int32_t beforeCall(void* stream);

  // Record path, after the call returned, with the ticket and stream of beforeCall. ok=false
  // (the call failed) releases the ticket. Otherwise records the end marker and hands
  // (ticket, event_index) to the watchdog. Returns true when poll() will report this op, false
  // when the caller must fall back to host completion (ok=false, a bad ticket, or the driver
  // failed); the ticket is consumed either way.
  bool afterCall(int32_t ticket, void* stream, uint64_t event_index, bool ok);

  // Watchdog thread only. Queries the pending ops; calls sink.started once when an op has started
  // (its start marker completed, or without start markers: no earlier op of its stream is still
  // pending) and sink.completed once when its end marker has (sink.captured when it was recorded
  // under graph capture), then recycles the slot. Ops on different streams complete in any
  // order. Returns the number still pending.
  size_t poll(Sink& sink);

  uint32_t capacity() const { return capacity_; }
  Markers markers() const { return markers_; }

 private:
  struct Driver : CudaDriver {  // resolved entry points
    void* handle = nullptr;     // of the dlopen'ed library
  };
  struct Slot {
    void* ctx = nullptr;    // CUcontext the events were created in; null = no events
    void* start = nullptr;  // CUevent, kStartAndEnd only
    void* end = nullptr;    // CUevent
    void* stream = nullptr;
    uint64_t event_index = 0;
    bool started = false;  // watchdog only
  };
  // Treiber stack of slot indices. head: low 32 bits index+1 (0 = empty), high 32 bits a tag
  // bumped by every change, so a pop racing with pop+push of the same slot fails its CAS.
  struct FreeList {
    std::atomic<void*> ctx{nullptr};  // set once for a context bucket; null for the generic list
    std::atomic<uint64_t> head{0};
  };
  // Free slots are kept per context so that a process driving several devices reuses events of
  // the right context instead of recreating them on every op. More contexts than buckets share
  // the generic list (and recreate events on mismatch).
  static constexpr int kContextBuckets = 16;

  CudaCompletion(std::unique_ptr<Driver> driver, uint32_t capacity, Markers markers);

  void* contextOf(void* stream) const;
  void* resolveContext(void* stream);
  int32_t claimPrepared(void* ctx);
  bool recordMarker(int32_t* index, bool start, void* stream, bool may_move);
  int32_t claim(void* ctx);
  bool prepare(Slot& slot, void* ctx);
  void dropEvents(Slot& slot);
  void release(uint32_t index);
  void push(FreeList& list, uint32_t index);
  int32_t pop(FreeList& list);
  FreeList* findBucket(void* ctx);
  FreeList& bucketForRelease(void* ctx);
  int query(Slot& slot, void* event);
  bool observeStart(Slot& slot, Sink& sink, int64_t now);

  std::unique_ptr<Driver> driver_;
  const uint32_t capacity_;
  const Markers markers_;
  StreamContexts contexts_;
  std::unique_ptr<Slot[]> slots_;
  std::unique_ptr<std::atomic<uint32_t>[]> next_;  // free-list links, index+1 (0 = end)
  FreeList generic_;
  FreeList buckets_[kContextBuckets];

  // Hand-off to the watchdog: producers reserve a position with fetch_add and publish
  // (position+1 truncated to 32 bits) << 32 | slot with a release store. At most capacity_ slots
  // are pending, so a position's cell was consumed before it is reused.
  std::unique_ptr<std::atomic<uint64_t>[]> handoff_;
  std::atomic<uint64_t> handoff_tail_{0};

  // Watchdog-only state.
  uint64_t handoff_head_ = 0;
  std::unique_ptr<uint32_t[]> pending_;  // slots handed off, in hand-off order
  size_t pending_count_ = 0;
  std::unique_ptr<BusyStreams> busy_;
};

}  // namespace ncclrec::recorder
