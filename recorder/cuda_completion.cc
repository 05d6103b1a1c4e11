#include "recorder/cuda_completion.h"

#include <dlfcn.h>

#include <cstdlib>
#include <new>
#include <utility>

#include "recorder/clock.h"
#include "recorder/cuda_driver.h"
#include "recorder/format/params_table.h"

namespace ncclrec::recorder {
namespace {

constexpr unsigned kEventDisableTiming = 0x2;
constexpr int kCaptureStatusNone = 0;
constexpr int kCaptureModeRelaxed = 2;
constexpr uintptr_t kLastSpecialStream = 2;  // 0 null, 1 CU_STREAM_LEGACY, 2 CU_STREAM_PER_THREAD

void setReason(std::string* why_not, std::string reason) {
  if (why_not != nullptr) *why_not = std::move(reason);
}

}  // namespace

struct CudaCompletion::Driver : CudaDriver {
  void* handle = nullptr;
};

std::unique_ptr<CudaCompletion> CudaCompletion::create(uint32_t max_pending, std::string* why_not) {
  return create(max_pending, format::paramValue(kLibraryEnv).c_str(), why_not);
}

std::unique_ptr<CudaCompletion> CudaCompletion::create(uint32_t max_pending, const char* library,
                                                       std::string* why_not) {
  if (max_pending == 0 || max_pending > kMaxMaxPending || (max_pending & (max_pending - 1)) != 0) {
    setReason(why_not, "max_pending " + std::to_string(max_pending) +
                           " is not a power of two in [1, " + std::to_string(kMaxMaxPending) + "]");
    return nullptr;
  }
  if (library == nullptr || *library == '\0') library = kDefaultLibrary;

  std::unique_ptr<Driver> d(new (std::nothrow) Driver);
  if (!d) {
    setReason(why_not, "out of memory");
    return nullptr;
  }
  d->handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (d->handle == nullptr) {
    const char* err = dlerror();
    setReason(why_not,
              std::string("cannot load the CUDA driver: ") + (err != nullptr ? err : library));
    return nullptr;
  }
  d->resolve(d->handle);
  if (const char* missing = d->missingForCompletion()) {
    setReason(why_not, std::string(library) + " does not export " + missing);
    dlclose(d->handle);
    return nullptr;
  }

  // From here on the library stays loaded even on failure: cuInit may have started driver
  // threads or registered exit handlers.
  if (CuResult r = d->init(0); r != kCudaSuccess) {
    setReason(why_not, "cuInit(0) failed: " + d->describe(r));
    return nullptr;
  }

  std::unique_ptr<CudaCompletion> self(new (std::nothrow)
                                           CudaCompletion(std::move(d), max_pending));
  if (self) {
    self->slots_.reset(new (std::nothrow) Slot[max_pending]);
    self->next_.reset(new (std::nothrow) std::atomic<uint32_t>[max_pending]);
    self->handoff_.reset(new (std::nothrow) std::atomic<uint64_t>[max_pending]);
    self->pending_.reset(new (std::nothrow) uint32_t[max_pending]);
  }
  if (!self || !self->slots_ || !self->next_ || !self->handoff_ || !self->pending_) {
    setReason(why_not, "out of memory for " + std::to_string(max_pending) + " pending ops");
    return nullptr;
  }
  for (uint32_t i = 0; i < max_pending; ++i) self->handoff_[i].store(0, std::memory_order_relaxed);
  // Pushed in reverse so that slot 0 is claimed first.
  for (uint32_t i = max_pending; i-- > 0;) self->push(self->generic_, i);
  return self;
}

CudaCompletion::CudaCompletion(std::unique_ptr<Driver> driver, uint32_t capacity)
    : driver_(std::move(driver)), capacity_(capacity) {}

CudaCompletion::~CudaCompletion() {
  if (!slots_) return;
  for (uint32_t i = 0; i < capacity_; ++i) {
    if (slots_[i].start != nullptr) driver_->eventDestroy(slots_[i].start);
    if (slots_[i].end != nullptr) driver_->eventDestroy(slots_[i].end);
  }
}

void* CudaCompletion::contextOf(void* stream) const {
  void* ctx = nullptr;
  // The default streams have no context of their own: they mean "of the current context".
  CuResult r = reinterpret_cast<uintptr_t>(stream) <= kLastSpecialStream
                   ? driver_->ctxGetCurrent(&ctx)
                   : driver_->streamGetCtx(stream, &ctx);
  return r == kCudaSuccess ? ctx : nullptr;
}

void CudaCompletion::push(FreeList& list, uint32_t index) {
  uint64_t head = list.head.load(std::memory_order_relaxed);
  uint64_t desired = 0;
  do {
    next_[index].store(static_cast<uint32_t>(head), std::memory_order_relaxed);
    desired = (((head >> 32) + 1) << 32) | (uint64_t{index} + 1);
  } while (!list.head.compare_exchange_weak(head, desired, std::memory_order_release,
                                            std::memory_order_relaxed));
}

int32_t CudaCompletion::pop(FreeList& list) {
  uint64_t head = list.head.load(std::memory_order_acquire);
  while (true) {
    auto top = static_cast<uint32_t>(head);
    if (top == 0) return -1;
    // May read a link that a racing push rewrites; the tag then makes the CAS below fail.
    uint32_t next = next_[top - 1].load(std::memory_order_relaxed);
    uint64_t desired = (((head >> 32) + 1) << 32) | next;
    if (list.head.compare_exchange_weak(head, desired, std::memory_order_acquire,
                                        std::memory_order_acquire)) {
      return static_cast<int32_t>(top - 1);
    }
  }
}

// Buckets are registered in array order and never unregistered, so the first empty one ends
// the search.
CudaCompletion::FreeList* CudaCompletion::findBucket(void* ctx) {
  for (FreeList& bucket : buckets_) {
    void* owner = bucket.ctx.load(std::memory_order_acquire);
    if (owner == ctx) return &bucket;
    if (owner == nullptr) return nullptr;
  }
  return nullptr;
}

CudaCompletion::FreeList& CudaCompletion::bucketForRelease(void* ctx) {
  if (ctx == nullptr) return generic_;
  for (FreeList& bucket : buckets_) {
    void* owner = bucket.ctx.load(std::memory_order_acquire);
    if (owner == nullptr &&
        bucket.ctx.compare_exchange_strong(owner, ctx, std::memory_order_acq_rel)) {
      return bucket;
    }
    if (owner == ctx) return bucket;
  }
  return generic_;
}

int32_t CudaCompletion::claim(void* ctx) {
  FreeList* own = findBucket(ctx);
  int32_t index = own != nullptr ? pop(*own) : -1;
  if (index < 0) index = pop(generic_);
  for (int b = 0; index < 0 && b < kContextBuckets; ++b) {
    if (&buckets_[b] != own) index = pop(buckets_[b]);
  }
  return index;
}

void CudaCompletion::release(uint32_t index) { push(bucketForRelease(slots_[index].ctx), index); }

bool CudaCompletion::prepare(Slot& slot, void* ctx) {
  if (slot.ctx == ctx && slot.start != nullptr) return true;
  // Events of another context: a stream only accepts events of its own context.
  if (slot.start != nullptr) driver_->eventDestroy(slot.start);
  if (slot.end != nullptr) driver_->eventDestroy(slot.end);
  slot.ctx = slot.start = slot.end = nullptr;

  // cuEventCreate creates in the calling thread's current context, which need not be the
  // stream's (a thread may drive streams of several devices).
  void* current = nullptr;
  if (driver_->ctxGetCurrent(&current) != kCudaSuccess) return false;
  const bool switched = current != ctx;
  if (switched && driver_->ctxPushCurrent(ctx) != kCudaSuccess) return false;
  void* start = nullptr;
  void* end = nullptr;
  CuResult r = driver_->eventCreate(&start, kEventDisableTiming);
  if (r == kCudaSuccess) {
    r = driver_->eventCreate(&end, kEventDisableTiming);
    if (r != kCudaSuccess) driver_->eventDestroy(start);
  }
  if (switched) {
    void* popped = nullptr;
    driver_->ctxPopCurrent(&popped);
  }
  if (r != kCudaSuccess) return false;
  slot.ctx = ctx;
  slot.start = start;
  slot.end = end;
  return true;
}

// After the driver rejected one of the slot's events, its context may be gone and the handles
// with it; touching them again (even to destroy) is not safe, so they are forgotten (a leak of
// two events on a path that should not recur) and the slot will get fresh ones.
void CudaCompletion::dropEvents(Slot& slot) { slot.ctx = slot.start = slot.end = nullptr; }

int32_t CudaCompletion::beforeCall(void* stream) {
  void* ctx = contextOf(stream);
  if (ctx == nullptr) return -1;
  if (driver_->streamIsCapturing != nullptr) {
    // A marker recorded during graph capture would become a graph node that runs only when the
    // graph is launched; querying it now would say nothing about this call.
    int status = kCaptureStatusNone;
    if (driver_->streamIsCapturing(stream, &status) != kCudaSuccess ||
        status != kCaptureStatusNone) {
      return -1;
    }
  }
  int32_t index = claim(ctx);
  if (index < 0) return -1;
  Slot& slot = slots_[index];
  if (!prepare(slot, ctx)) {
    release(static_cast<uint32_t>(index));
    return -1;
  }
  if (driver_->eventRecord(slot.start, stream) != kCudaSuccess) {
    dropEvents(slot);
    release(static_cast<uint32_t>(index));
    return -1;
  }
  return index;
}

bool CudaCompletion::afterCall(int32_t ticket, void* stream, uint64_t event_index, bool ok) {
  if (ticket < 0 || static_cast<uint32_t>(ticket) >= capacity_) return false;
  const auto index = static_cast<uint32_t>(ticket);
  Slot& slot = slots_[index];
  if (!ok) {
    release(index);
    return false;
  }
  if (driver_->eventRecord(slot.end, stream) != kCudaSuccess) {
    dropEvents(slot);
    release(index);
    return false;
  }
  slot.event_index = event_index;
  slot.started = false;
  const uint64_t position = handoff_tail_.fetch_add(1, std::memory_order_relaxed);
  const uint64_t cell = (uint64_t{static_cast<uint32_t>(position + 1)} << 32) | index;
  handoff_[position & (capacity_ - 1)].store(cell, std::memory_order_release);
  return true;
}

int CudaCompletion::query(Slot& slot, void* event) {
  CuResult r = driver_->eventQuery(event);
  if (r == kCudaErrorInvalidContext) {
    // Some drivers want a current context even for handle-based queries.
    if (driver_->ctxPushCurrent(slot.ctx) != kCudaSuccess) return r;
    r = driver_->eventQuery(event);
    void* popped = nullptr;
    driver_->ctxPopCurrent(&popped);
  }
  return r;
}

size_t CudaCompletion::poll(Sink& sink) {
  // Event queries are "potentially unsafe" during another thread's global-mode graph capture
  // and would invalidate it; relaxed mode exempts this thread (as PyTorch's watchdog does).
  thread_local bool relaxed_capture_mode = false;
  if (!relaxed_capture_mode && driver_->threadExchangeStreamCaptureMode != nullptr) {
    int mode = kCaptureModeRelaxed;
    relaxed_capture_mode = driver_->threadExchangeStreamCaptureMode(&mode) == kCudaSuccess;
  }

  const uint64_t mask = capacity_ - 1;
  while (true) {
    const uint64_t cell = handoff_[handoff_head_ & mask].load(std::memory_order_acquire);
    if (static_cast<uint32_t>(cell >> 32) != static_cast<uint32_t>(handoff_head_ + 1)) break;
    pending_[pending_count_++] = static_cast<uint32_t>(cell);
    ++handoff_head_;
  }

  const int64_t now = realtimeNs();
  size_t kept = 0;
  for (size_t k = 0; k < pending_count_; ++k) {
    const uint32_t index = pending_[k];
    Slot& slot = slots_[index];
    CuResult r = kCudaSuccess;
    if (!slot.started) {
      r = query(slot, slot.start);
      if (r == kCudaSuccess) {
        slot.started = true;
        sink.started(slot.event_index, now);
      }
    }
    // Stream order: the end marker cannot be done while the start marker is not.
    if (r == kCudaSuccess) r = query(slot, slot.end);
    if (r == kCudaErrorNotReady) {
      pending_[kept++] = index;
    } else if (r == kCudaSuccess) {
      sink.completed(slot.event_index, now);
      release(index);
    } else {
      sink.lost(slot.event_index, r, now);
      dropEvents(slot);
      release(index);
    }
  }
  pending_count_ = kept;
  return kept;
}

}  // namespace ncclrec::recorder
