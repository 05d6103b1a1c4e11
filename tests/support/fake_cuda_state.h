// State shared by the fake CUDA driver's entry points (fake_cuda.cc) and its control API for tests
// (fake_cuda_control.cc). Internal to libcuda.so.1 of tests/support; see fake_cuda.cc for what the
// fake emulates.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace fake_cuda {

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
constexpr CUresult kErrorCapturedEvent = 907;

// The driver entry points, counted per function (fakeCudaCallCount) and per calling thread
// (fakeCudaThreadCalls). Names as the driver exports them.
enum class Fn {
  cuInit,
  cuGetErrorName,
  cuCtxGetCurrent,
  cuCtxGetDevice,
  cuDeviceGet,
  cuDeviceGetPCIBusId,
  cuDeviceGetUuid_v2,
  cuCtxPushCurrent_v2,
  cuCtxPopCurrent_v2,
  cuStreamGetCtx,
  cuStreamIsCapturing,
  cuThreadExchangeStreamCaptureMode,
  cuEventCreate,
  cuEventRecord,
  cuEventQuery,
  cuEventDestroy_v2,
  kCount
};
inline constexpr const char* kFnNames[] = {
    "cuInit",
    "cuGetErrorName",
    "cuCtxGetCurrent",
    "cuCtxGetDevice",
    "cuDeviceGet",
    "cuDeviceGetPCIBusId",
    "cuDeviceGetUuid_v2",
    "cuCtxPushCurrent_v2",
    "cuCtxPopCurrent_v2",
    "cuStreamGetCtx",
    "cuStreamIsCapturing",
    "cuThreadExchangeStreamCaptureMode",
    "cuEventCreate",
    "cuEventRecord",
    "cuEventQuery",
    "cuEventDestroy_v2",
};
static_assert(sizeof(kFnNames) / sizeof(kFnNames[0]) == static_cast<size_t>(Fn::kCount));

struct Counters {
  std::atomic<uint64_t> calls[static_cast<int>(Fn::kCount)] = {};
};
Counters& counters();
extern thread_local uint64_t tls_calls;  // driver calls made by this thread since its reset

inline void count(Fn fn) {
  counters().calls[static_cast<int>(fn)].fetch_add(1, std::memory_order_relaxed);
  ++tls_calls;
}

void* defaultContext();

struct Stream {
  void* ctx = defaultContext();  // nullptr: an invalid handle
  bool blocked = false;
  bool capturing = false;
  uint64_t recorded = 0;   // markers recorded on it so far (not counting captured ones)
  uint64_t completed = 0;  // markers the "GPU" has executed
};

struct Event {
  void* ctx = nullptr;
  unsigned flags = 0;
  bool recorded = false;
  bool captured = false;  // last recorded on a capturing stream
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

State& state();

// The calling thread's context stack; base is what cuCtxSetCurrent would set.
struct ThreadContext {
  void* base = defaultContext();
  std::vector<void*> stack;
  int capture_mode = 0;  // CU_STREAM_CAPTURE_MODE_GLOBAL
  void* current() const { return stack.empty() ? base : stack.back(); }
};
extern thread_local ThreadContext tls;

inline bool isSpecial(void* stream) { return reinterpret_cast<uintptr_t>(stream) <= 2; }

// Caller holds the mutex.
inline Stream& streamOf(State& s, void* stream) {
  auto key = reinterpret_cast<uintptr_t>(stream);
  // 0 and 1 both name the legacy stream.
  if (key == 0) key = 1;
  return s.streams[key];
}

}  // namespace fake_cuda

#define FAKE_CUDA_EXPORT extern "C" __attribute__((visibility("default")))
