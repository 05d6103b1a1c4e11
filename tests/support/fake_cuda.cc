// A fake CUDA driver (libcuda.so.1) for testing completion tracking without a GPU.
//
// It exports the driver entry points the recorder resolves, with the driver's ABI (CUresult is
// an int, handles are opaque pointers), and a control API (fakeCuda*) for tests:
// - A stream is any pointer. Unless told otherwise it belongs to fakeCudaDefaultContext(); the
//   special streams 0, 1 (legacy) and 2 (per-thread) belong to the calling thread's current
//   context.
// - An event recorded on an unblocked stream is complete at once. While a stream is blocked,
//   events recorded on it stay not ready (CUDA_ERROR_NOT_READY); unblocking completes them, in
//   order, as a GPU draining the stream would.
// - cuEventRecord rejects an event of another context than the stream's (as the driver does),
//   cuEventCreate creates in the calling thread's current context.
// - FAKE_CUDA_FAIL_INIT=1 in the environment makes cuInit fail with CUDA_ERROR_NO_DEVICE.
// - Devices: 4 by default (fakeCudaSetDeviceCount). A context is on device 0 unless
//   fakeCudaSetContextDevice says otherwise. Device d's PCI bus id is "0000:%02X:00.0" with
//   0x1A + d (upper case, as some drivers print it), its UUID bytes are (d << 4) | i.
// Everything is serialized by one mutex: this is a test double, not a performance model.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace {

using CUresult = int;
constexpr CUresult kSuccess = 0;
constexpr CUresult kErrorInvalidValue = 1;
constexpr CUresult kErrorNotInitialized = 3;
constexpr CUresult kErrorNoDevice = 100;
constexpr CUresult kErrorInvalidDevice = 101;
constexpr CUresult kErrorInvalidContext = 201;
constexpr CUresult kErrorInvalidHandle = 400;
constexpr CUresult kErrorNotReady = 600;
constexpr CUresult kErrorIllegalAddress = 700;

int gDefaultContextStorage;
void* const kDefaultContext = &gDefaultContextStorage;

struct Stream {
  void* ctx = kDefaultContext;  // nullptr: an invalid handle
  bool blocked = false;
  bool capturing = false;
  uint64_t recorded = 0;   // markers recorded on it so far
  uint64_t completed = 0;  // markers the "GPU" has executed
};

struct Event {
  void* ctx = nullptr;
  unsigned flags = 0;
  bool recorded = false;
  void* stream = nullptr;
  uint64_t seq = 0;
};

struct State {
  std::mutex mu;
  bool initialized = false;
  std::unordered_map<uintptr_t, Stream> streams;
  std::unordered_set<Event*> events;
  int fail_records = 0;
  CUresult query_error = kSuccess;
  bool query_needs_context = false;
  uint64_t created = 0;
  uint64_t destroyed = 0;
  uint64_t records = 0;
  uint64_t timing_events = 0;  // created without CU_EVENT_DISABLE_TIMING
  int device_count = 4;
  std::unordered_map<void*, int> context_device;  // absent: device 0
};

State& state() {
  static auto* s = new State;  // never destroyed: other libraries may call in at exit
  return *s;
}

// The calling thread's context stack; base is what cuCtxSetCurrent would set.
struct ThreadContext {
  void* base = kDefaultContext;
  std::vector<void*> stack;
  int capture_mode = 0;  // CU_STREAM_CAPTURE_MODE_GLOBAL
  void* current() const { return stack.empty() ? base : stack.back(); }
};
thread_local ThreadContext tls;

bool isSpecial(void* stream) { return reinterpret_cast<uintptr_t>(stream) <= 2; }

// Caller holds the mutex.
Stream& streamOf(State& s, void* stream) {
  auto key = reinterpret_cast<uintptr_t>(stream);
  // 0 and 1 both name the legacy stream.
  if (key == 0) key = 1;
  return s.streams[key];
}

CUresult contextOfStream(State& s, void* stream, void** ctx) {
  if (isSpecial(stream)) {
    *ctx = tls.current();
    return *ctx != nullptr ? kSuccess : kErrorInvalidContext;
  }
  *ctx = streamOf(s, stream).ctx;
  return *ctx != nullptr ? kSuccess : kErrorInvalidHandle;
}

}  // namespace

#define FAKE_CUDA_EXPORT extern "C" __attribute__((visibility("default")))

// ---- Driver entry points ----

FAKE_CUDA_EXPORT CUresult cuInit(unsigned flags) {
  if (flags != 0) return kErrorInvalidValue;
  const char* fail = std::getenv("FAKE_CUDA_FAIL_INIT");
  if (fail != nullptr && std::strcmp(fail, "1") == 0) return kErrorNoDevice;
  State& s = state();
  std::lock_guard lock(s.mu);
  s.initialized = true;
  return kSuccess;
}

FAKE_CUDA_EXPORT CUresult cuGetErrorName(CUresult error, const char** name) {
  switch (error) {
    case kSuccess:
      *name = "CUDA_SUCCESS";
      return kSuccess;
    case kErrorInvalidValue:
      *name = "CUDA_ERROR_INVALID_VALUE";
      return kSuccess;
    case kErrorNotInitialized:
      *name = "CUDA_ERROR_NOT_INITIALIZED";
      return kSuccess;
    case kErrorNoDevice:
      *name = "CUDA_ERROR_NO_DEVICE";
      return kSuccess;
    case kErrorInvalidDevice:
      *name = "CUDA_ERROR_INVALID_DEVICE";
      return kSuccess;
    case kErrorInvalidContext:
      *name = "CUDA_ERROR_INVALID_CONTEXT";
      return kSuccess;
    case kErrorInvalidHandle:
      *name = "CUDA_ERROR_INVALID_HANDLE";
      return kSuccess;
    case kErrorNotReady:
      *name = "CUDA_ERROR_NOT_READY";
      return kSuccess;
    case kErrorIllegalAddress:
      *name = "CUDA_ERROR_ILLEGAL_ADDRESS";
      return kSuccess;
    default:
      *name = nullptr;
      return kErrorInvalidValue;
  }
}

FAKE_CUDA_EXPORT CUresult cuCtxGetCurrent(void** ctx) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!s.initialized) return kErrorNotInitialized;
  *ctx = tls.current();
  return kSuccess;
}

FAKE_CUDA_EXPORT CUresult cuCtxGetDevice(int* device) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!s.initialized) return kErrorNotInitialized;
  void* ctx = tls.current();
  if (ctx == nullptr) return kErrorInvalidContext;
  const auto it = s.context_device.find(ctx);
  *device = it != s.context_device.end() ? it->second : 0;
  return kSuccess;
}

FAKE_CUDA_EXPORT CUresult cuDeviceGet(int* device, int ordinal) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!s.initialized) return kErrorNotInitialized;
  if (ordinal < 0 || ordinal >= s.device_count) return kErrorInvalidDevice;
  *device = ordinal;
  return kSuccess;
}

FAKE_CUDA_EXPORT CUresult cuDeviceGetPCIBusId(char* bus_id, int len, int device) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!s.initialized) return kErrorNotInitialized;
  if (device < 0 || device >= s.device_count) return kErrorInvalidDevice;
  if (bus_id == nullptr || len < 13) return kErrorInvalidValue;
  std::snprintf(bus_id, static_cast<size_t>(len), "0000:%02X:00.0", 0x1A + device);
  return kSuccess;
}

FAKE_CUDA_EXPORT CUresult cuDeviceGetUuid_v2(unsigned char* uuid, int device) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!s.initialized) return kErrorNotInitialized;
  if (device < 0 || device >= s.device_count) return kErrorInvalidDevice;
  for (int i = 0; i < 16; ++i) uuid[i] = static_cast<unsigned char>((device << 4) | i);
  return kSuccess;
}

FAKE_CUDA_EXPORT CUresult cuCtxPushCurrent_v2(void* ctx) {
  if (ctx == nullptr) return kErrorInvalidContext;
  tls.stack.push_back(ctx);
  return kSuccess;
}

FAKE_CUDA_EXPORT CUresult cuCtxPopCurrent_v2(void** ctx) {
  if (tls.stack.empty()) return kErrorInvalidContext;
  if (ctx != nullptr) *ctx = tls.stack.back();
  tls.stack.pop_back();
  return kSuccess;
}

FAKE_CUDA_EXPORT CUresult cuStreamGetCtx(void* stream, void** ctx) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!s.initialized) return kErrorNotInitialized;
  // Like the driver, the per-thread stream is not accepted here.
  if (reinterpret_cast<uintptr_t>(stream) == 2) return kErrorInvalidHandle;
  return contextOfStream(s, stream, ctx);
}

FAKE_CUDA_EXPORT CUresult cuStreamIsCapturing(void* stream, int* status) {
  State& s = state();
  std::lock_guard lock(s.mu);
  *status = streamOf(s, stream).capturing ? 1 : 0;
  return kSuccess;
}

FAKE_CUDA_EXPORT CUresult cuThreadExchangeStreamCaptureMode(int* mode) {
  int previous = tls.capture_mode;
  tls.capture_mode = *mode;
  *mode = previous;
  return kSuccess;
}

FAKE_CUDA_EXPORT CUresult cuEventCreate(void** event, unsigned flags) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!s.initialized) return kErrorNotInitialized;
  void* ctx = tls.current();
  if (ctx == nullptr) return kErrorInvalidContext;
  auto* e = new Event;
  e->ctx = ctx;
  e->flags = flags;
  s.events.insert(e);
  ++s.created;
  if ((flags & 0x2) == 0) ++s.timing_events;
  *event = e;
  return kSuccess;
}

FAKE_CUDA_EXPORT CUresult cuEventRecord(void* event, void* stream) {
  State& s = state();
  std::lock_guard lock(s.mu);
  auto* e = static_cast<Event*>(event);
  if (s.events.count(e) == 0) return kErrorInvalidHandle;
  void* ctx = nullptr;
  if (CUresult r = contextOfStream(s, stream, &ctx); r != kSuccess) return r;
  if (ctx != e->ctx) return kErrorInvalidHandle;
  if (s.fail_records > 0) {
    --s.fail_records;
    return kErrorIllegalAddress;
  }
  Stream& st = streamOf(s, stream);
  e->recorded = true;
  e->stream = stream;
  e->seq = ++st.recorded;
  if (!st.blocked) st.completed = st.recorded;
  ++s.records;
  return kSuccess;
}

FAKE_CUDA_EXPORT CUresult cuEventQuery(void* event) {
  State& s = state();
  std::lock_guard lock(s.mu);
  auto* e = static_cast<Event*>(event);
  if (s.events.count(e) == 0) return kErrorInvalidHandle;
  if (s.query_needs_context && tls.current() != e->ctx) return kErrorInvalidContext;
  if (s.query_error != kSuccess) return s.query_error;
  if (!e->recorded) return kSuccess;
  return e->seq <= streamOf(s, e->stream).completed ? kSuccess : kErrorNotReady;
}

FAKE_CUDA_EXPORT CUresult cuEventDestroy_v2(void* event) {
  State& s = state();
  std::lock_guard lock(s.mu);
  auto* e = static_cast<Event*>(event);
  if (s.events.erase(e) == 0) return kErrorInvalidHandle;
  delete e;
  ++s.destroyed;
  return kSuccess;
}

// ---- Control API for tests ----

struct FakeCudaStats {
  uint64_t created;
  uint64_t destroyed;
  uint64_t live;
  uint64_t records;
  uint64_t timing_events;
};

// Forgets every stream and event and clears all injected failures; the calling thread's current
// context goes back to the default one.
FAKE_CUDA_EXPORT void fakeCudaReset() {
  State& s = state();
  std::lock_guard lock(s.mu);
  for (Event* e : s.events) delete e;
  s.events.clear();
  s.streams.clear();
  s.fail_records = 0;
  s.query_error = kSuccess;
  s.query_needs_context = false;
  s.created = s.destroyed = s.records = s.timing_events = 0;
  s.device_count = 4;
  s.context_device.clear();
  tls = ThreadContext{};
}

FAKE_CUDA_EXPORT void fakeCudaSetDeviceCount(int count) {
  State& s = state();
  std::lock_guard lock(s.mu);
  s.device_count = count;
}

// The device `ctx` belongs to (cuCtxGetDevice).
FAKE_CUDA_EXPORT void fakeCudaSetContextDevice(void* ctx, int device) {
  State& s = state();
  std::lock_guard lock(s.mu);
  s.context_device[ctx] = device;
}

FAKE_CUDA_EXPORT void* fakeCudaDefaultContext() { return kDefaultContext; }

// nullptr makes the stream an invalid handle (cuStreamGetCtx and cuEventRecord fail on it).
FAKE_CUDA_EXPORT void fakeCudaSetStreamContext(void* stream, void* ctx) {
  State& s = state();
  std::lock_guard lock(s.mu);
  streamOf(s, stream).ctx = ctx;
}

FAKE_CUDA_EXPORT void fakeCudaSetStreamBlocked(void* stream, int blocked) {
  State& s = state();
  std::lock_guard lock(s.mu);
  Stream& st = streamOf(s, stream);
  st.blocked = blocked != 0;
  if (!st.blocked) st.completed = st.recorded;
}

FAKE_CUDA_EXPORT void fakeCudaSetStreamCapturing(void* stream, int capturing) {
  State& s = state();
  std::lock_guard lock(s.mu);
  streamOf(s, stream).capturing = capturing != 0;
}

// The calling thread's current context (cuCtxSetCurrent); nullptr = none.
FAKE_CUDA_EXPORT void fakeCudaSetCurrentContext(void* ctx) { tls.base = ctx; }

FAKE_CUDA_EXPORT int fakeCudaThreadCaptureMode() { return tls.capture_mode; }

// The next `count` cuEventRecord calls fail with CUDA_ERROR_ILLEGAL_ADDRESS.
FAKE_CUDA_EXPORT void fakeCudaFailEventRecords(int count) {
  State& s = state();
  std::lock_guard lock(s.mu);
  s.fail_records = count;
}

// Every cuEventQuery returns `error` (0 = normal behaviour): a sticky error.
FAKE_CUDA_EXPORT void fakeCudaSetQueryError(int error) {
  State& s = state();
  std::lock_guard lock(s.mu);
  s.query_error = error;
}

// cuEventQuery returns CUDA_ERROR_INVALID_CONTEXT unless the event's context is current.
FAKE_CUDA_EXPORT void fakeCudaSetQueryNeedsContext(int needs) {
  State& s = state();
  std::lock_guard lock(s.mu);
  s.query_needs_context = needs != 0;
}

FAKE_CUDA_EXPORT void fakeCudaGetStats(FakeCudaStats* stats) {
  State& s = state();
  std::lock_guard lock(s.mu);
  *stats = FakeCudaStats{s.created, s.destroyed, s.events.size(), s.records, s.timing_events};
}
