// The fake CUDA driver's control API for tests (fakeCuda*), reached with dlsym on the same handle
// the code under test opened. See fake_cuda.cc for the emulation it steers.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <mutex>

#include "tests/support/fake_cuda_state.h"

using namespace fake_cuda;  // NOLINT: the control API is a C ABI, outside any namespace

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
  for (auto& n : counters().calls) n.store(0, std::memory_order_relaxed);
  tls_calls = 0;
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

FAKE_CUDA_EXPORT void* fakeCudaDefaultContext() { return defaultContext(); }

// Also what a stream handle destroyed and reused by a new stream of `ctx` looks like to a caller.
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

// On a blocked stream, the "GPU" executes the next `count` markers recorded on it (at most all).
FAKE_CUDA_EXPORT void fakeCudaAdvanceStream(void* stream, int count) {
  State& s = state();
  std::lock_guard lock(s.mu);
  Stream& st = streamOf(s, stream);
  st.completed = std::min(st.recorded, st.completed + static_cast<uint64_t>(count));
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

// Calls of the driver entry point `name` (e.g. "cuEventRecord") by all threads since the last
// reset; -1 for a name the fake does not export.
FAKE_CUDA_EXPORT long long fakeCudaCallCount(const char* name) {
  for (int i = 0; i < static_cast<int>(Fn::kCount); ++i) {
    if (std::strcmp(name, kFnNames[i]) == 0)
      return static_cast<long long>(counters().calls[i].load(std::memory_order_relaxed));
  }
  return -1;
}

// Driver calls (all entry points) made by the calling thread since fakeCudaReset or
// fakeCudaResetThreadCalls on this thread.
FAKE_CUDA_EXPORT unsigned long long fakeCudaThreadCalls() { return tls_calls; }
FAKE_CUDA_EXPORT void fakeCudaResetThreadCalls() { tls_calls = 0; }
