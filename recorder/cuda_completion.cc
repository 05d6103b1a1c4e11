#include "recorder/cuda_completion.h"

#include <dlfcn.h>

#include <cstdlib>
#include <new>
#include <utility>

#include "format/params_table.h"
#include "recorder/busy_streams.h"
#include "recorder/cuda_driver.h"

namespace ncclrec::recorder {
namespace {

constexpr unsigned kEventDisableTiming = 0x2;

void setReason(std::string* why_not, std::string reason) {
  if (why_not != nullptr) *why_not = std::move(reason);
}

}  // namespace

std::unique_ptr<CudaCompletion> CudaCompletion::create(uint32_t max_pending, std::string* why_not,
                                                       Markers markers) {
  return create(max_pending, format::paramValue(kLibraryEnv).c_str(), why_not, markers);
}

std::unique_ptr<CudaCompletion> CudaCompletion::create(uint32_t max_pending, const char* library,
                                                       std::string* why_not, Markers markers) {
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
                                           CudaCompletion(std::move(d), max_pending, markers));
  if (self) {
    self->slots_.reset(new (std::nothrow) Slot[max_pending]);
    self->next_.reset(new (std::nothrow) std::atomic<uint32_t>[max_pending]);
    self->handoff_.reset(new (std::nothrow) std::atomic<uint64_t>[max_pending]);
    self->pending_.reset(new (std::nothrow) uint32_t[max_pending]);
    self->busy_.reset(new (std::nothrow) BusyStreams);
  }
  if (!self || !self->slots_ || !self->next_ || !self->handoff_ || !self->pending_ ||
      !self->busy_) {
    setReason(why_not, "out of memory for " + std::to_string(max_pending) + " pending ops");
    return nullptr;
  }
  for (uint32_t i = 0; i < max_pending; ++i) self->handoff_[i].store(0, std::memory_order_relaxed);
  // Pushed in reverse so that slot 0 is claimed first.
  for (uint32_t i = max_pending; i-- > 0;) self->push(self->generic_, i);
  return self;
}

CudaCompletion::CudaCompletion(std::unique_ptr<Driver> driver, uint32_t capacity, Markers markers)
    : driver_(std::move(driver)), capacity_(capacity), markers_(markers) {}

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
  CuResult r = StreamContexts::isDefaultStream(stream) ? driver_->ctxGetCurrent(&ctx)
                                                       : driver_->streamGetCtx(stream, &ctx);
  return r == kCudaSuccess ? ctx : nullptr;
}

void* CudaCompletion::resolveContext(void* stream) {
  void* ctx = contextOf(stream);
  if (ctx != nullptr) contexts_.remember(stream, ctx);
  return ctx;
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
  const bool with_start = markers_ == Markers::kStartAndEnd;
  if (slot.ctx == ctx && slot.end != nullptr) return true;
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
  CuResult r = driver_->eventCreate(&end, kEventDisableTiming);
  if (r == kCudaSuccess && with_start) {
    r = driver_->eventCreate(&start, kEventDisableTiming);
    if (r != kCudaSuccess) driver_->eventDestroy(end);
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

int32_t CudaCompletion::claimPrepared(void* ctx) {
  const int32_t index = claim(ctx);
  if (index < 0) return -1;
  if (!prepare(slots_[index], ctx)) {
    release(static_cast<uint32_t>(index));
    return -1;
  }
  return index;
}

// Records the slot's start or end marker on `stream`. When the driver refuses, the remembered
// context may be stale (the handle now names a stream of another context, or the thread's current
// context changed under a default stream): with may_move, asks the driver once and, when the
// context did change, records with a slot of the new context (*index changes). False when the
// marker could not be recorded; the slot is then released.
bool CudaCompletion::recordMarker(int32_t* index, bool start, void* stream, bool may_move) {
  Slot* slot = &slots_[*index];
  if (driver_->eventRecord(start ? slot->start : slot->end, stream) == kCudaSuccess) return true;
  void* ctx = may_move ? resolveContext(stream) : nullptr;
  if (ctx == nullptr || ctx == slot->ctx) {
    dropEvents(*slot);
    release(static_cast<uint32_t>(*index));
    return false;
  }
  // The refusal is explained by the context: the slot's events are sound for their own.
  release(static_cast<uint32_t>(*index));
  if ((*index = claimPrepared(ctx)) < 0) return false;
  slot = &slots_[*index];
  if (driver_->eventRecord(start ? slot->start : slot->end, stream) == kCudaSuccess) return true;
  dropEvents(*slot);
  release(static_cast<uint32_t>(*index));
  return false;
}

int32_t CudaCompletion::beforeCall(void* stream) {
  void* ctx = contexts_.find(stream);
  if (ctx == nullptr && (ctx = resolveContext(stream)) == nullptr) return -1;
  int32_t index = claimPrepared(ctx);
  if (index < 0) return -1;
  if (markers_ == Markers::kStartAndEnd && !recordMarker(&index, true, stream, true)) return -1;
  return index;
}

bool CudaCompletion::afterCall(int32_t ticket, void* stream, uint64_t event_index, bool ok) {
  if (ticket < 0 || static_cast<uint32_t>(ticket) >= capacity_) return false;
  if (!ok) {
    release(static_cast<uint32_t>(ticket));
    return false;
  }
  // With a start marker already recorded, the op stays in its slot.
  int32_t index = ticket;
  if (!recordMarker(&index, false, stream, markers_ == Markers::kEnd)) return false;
  Slot& slot = slots_[index];
  slot.stream = stream;
  slot.event_index = event_index;
  slot.started = false;
  const uint64_t position = handoff_tail_.fetch_add(1, std::memory_order_relaxed);
  const uint64_t cell =
      (uint64_t{static_cast<uint32_t>(position + 1)} << 32) | static_cast<uint32_t>(index);
  handoff_[position & (capacity_ - 1)].store(cell, std::memory_order_release);
  return true;
}

}  // namespace ncclrec::recorder
