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
// - Graph capture (fakeCudaSetStreamCapturing): an event recorded on a capturing stream is not
//   work on the stream; cuEventQuery on it answers CUDA_ERROR_CAPTURED_EVENT until it is recorded
//   again, as the driver does.
// - Destroying a stream and creating another with the same handle in another context:
//   fakeCudaSetStreamContext on a stream already used.
// - Every entry point counts its calls, per function and per calling thread (fakeCudaCallCount,
//   fakeCudaThreadCalls), so a test can tell how many driver calls an op costs.
// Everything is serialized by one mutex: this is a test double, not a performance model.
// The control API for tests is in fake_cuda_control.cc.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "tests/support/fake_cuda_state.h"

namespace fake_cuda {
namespace {
int gDefaultContextStorage;
}  // namespace

void* defaultContext() { return &gDefaultContextStorage; }

Counters& counters() {
  static auto* c = new Counters;  // never destroyed: other libraries may call in at exit
  return *c;
}
thread_local uint64_t tls_calls = 0;

State& state() {
  static auto* s = new State;  // never destroyed: other libraries may call in at exit
  return *s;
}

thread_local ThreadContext tls;

namespace {

// Caller holds the mutex.
CUresult contextOfStream(State& s, void* stream, void** ctx) {
  if (isSpecial(stream)) {
    *ctx = tls.current();
    return *ctx != nullptr ? kSuccess : kErrorInvalidContext;
  }
  *ctx = streamOf(s, stream).ctx;
  return *ctx != nullptr ? kSuccess : kErrorInvalidHandle;
}

}  // namespace
}  // namespace fake_cuda

using namespace fake_cuda;  // NOLINT: the entry points are the C ABI, outside any namespace

// ---- Driver entry points ----

FAKE_CUDA_EXPORT CUresult cuInit(unsigned flags) {
  count(Fn::cuInit);
  if (flags != 0) return kErrorInvalidValue;
  const char* fail = std::getenv("FAKE_CUDA_FAIL_INIT");
  if (fail != nullptr && std::strcmp(fail, "1") == 0) return kErrorNoDevice;
  State& s = state();
  std::lock_guard lock(s.mu);
  s.initialized = true;
  return kSuccess;
}

FAKE_CUDA_EXPORT CUresult cuGetErrorName(CUresult error, const char** name) {
  count(Fn::cuGetErrorName);
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
    case kErrorCapturedEvent:
      *name = "CUDA_ERROR_CAPTURED_EVENT";
      return kSuccess;
    default:
      *name = nullptr;
      return kErrorInvalidValue;
  }
}

FAKE_CUDA_EXPORT CUresult cuCtxGetCurrent(void** ctx) {
  count(Fn::cuCtxGetCurrent);
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!s.initialized) return kErrorNotInitialized;
  *ctx = tls.current();
  return kSuccess;
}

FAKE_CUDA_EXPORT CUresult cuCtxGetDevice(int* device) {
  count(Fn::cuCtxGetDevice);
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
  count(Fn::cuDeviceGet);
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!s.initialized) return kErrorNotInitialized;
  if (ordinal < 0 || ordinal >= s.device_count) return kErrorInvalidDevice;
  *device = ordinal;
  return kSuccess;
}

FAKE_CUDA_EXPORT CUresult cuDeviceGetPCIBusId(char* bus_id, int len, int device) {
  count(Fn::cuDeviceGetPCIBusId);
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!s.initialized) return kErrorNotInitialized;
  if (device < 0 || device >= s.device_count) return kErrorInvalidDevice;
  if (bus_id == nullptr || len < 13) return kErrorInvalidValue;
  std::snprintf(bus_id, static_cast<size_t>(len), "0000:%02X:00.0", 0x1A + device);
  return kSuccess;
}

FAKE_CUDA_EXPORT CUresult cuDeviceGetUuid_v2(unsigned char* uuid, int device) {
  count(Fn::cuDeviceGetUuid_v2);
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!s.initialized) return kErrorNotInitialized;
  if (device < 0 || device >= s.device_count) return kErrorInvalidDevice;
  for (int i = 0; i < 16; ++i) uuid[i] = static_cast<unsigned char>((device << 4) | i);
  return kSuccess;
}

FAKE_CUDA_EXPORT CUresult cuCtxPushCurrent_v2(void* ctx) {
  count(Fn::cuCtxPushCurrent_v2);
  if (ctx == nullptr) return kErrorInvalidContext;
  tls.stack.push_back(ctx);
  return kSuccess;
}

FAKE_CUDA_EXPORT CUresult cuCtxPopCurrent_v2(void** ctx) {
  count(Fn::cuCtxPopCurrent_v2);
  if (tls.stack.empty()) return kErrorInvalidContext;
  if (ctx != nullptr) *ctx = tls.stack.back();
  tls.stack.pop_back();
  return kSuccess;
}

FAKE_CUDA_EXPORT CUresult cuStreamGetCtx(void* stream, void** ctx) {
  count(Fn::cuStreamGetCtx);
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!s.initialized) return kErrorNotInitialized;
  // Like the driver, the per-thread stream is not accepted here.
  if (reinterpret_cast<uintptr_t>(stream) == 2) return kErrorInvalidHandle;
  return contextOfStream(s, stream, ctx);
}

FAKE_CUDA_EXPORT CUresult cuStreamIsCapturing(void* stream, int* status) {
  count(Fn::cuStreamIsCapturing);
  State& s = state();
  std::lock_guard lock(s.mu);
  *status = streamOf(s, stream).capturing ? 1 : 0;
  return kSuccess;
}

FAKE_CUDA_EXPORT CUresult cuThreadExchangeStreamCaptureMode(int* mode) {
  count(Fn::cuThreadExchangeStreamCaptureMode);
  int previous = tls.capture_mode;
  tls.capture_mode = *mode;
  *mode = previous;
  return kSuccess;
}

FAKE_CUDA_EXPORT CUresult cuEventCreate(void** event, unsigned flags) {
  count(Fn::cuEventCreate);
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
  count(Fn::cuEventRecord);
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
  ++s.records;
  // Under capture a plain record is no work on the stream (and no graph node): it only marks a
  // point of the capture for cuStreamWaitEvent.
  e->captured = st.capturing;
  if (e->captured) return kSuccess;
  e->seq = ++st.recorded;
  if (!st.blocked) st.completed = st.recorded;
  return kSuccess;
}

FAKE_CUDA_EXPORT CUresult cuEventQuery(void* event) {
  count(Fn::cuEventQuery);
  State& s = state();
  std::lock_guard lock(s.mu);
  auto* e = static_cast<Event*>(event);
  if (s.events.count(e) == 0) return kErrorInvalidHandle;
  if (s.query_needs_context && tls.current() != e->ctx) return kErrorInvalidContext;
  if (s.query_error != kSuccess) return s.query_error;
  if (!e->recorded) return kSuccess;
  if (e->captured) return kErrorCapturedEvent;
  return e->seq <= streamOf(s, e->stream).completed ? kSuccess : kErrorNotReady;
}

FAKE_CUDA_EXPORT CUresult cuEventDestroy_v2(void* event) {
  count(Fn::cuEventDestroy_v2);
  State& s = state();
  std::lock_guard lock(s.mu);
  auto* e = static_cast<Event*>(event);
  if (s.events.erase(e) == 0) return kErrorInvalidHandle;
  delete e;
  ++s.destroyed;
  return kSuccess;
}
