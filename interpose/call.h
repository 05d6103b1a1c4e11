// The pattern every wrapper follows: forward unchanged, and record around the forward when this
// is the outermost NCCL call of the thread and the recorder is on.
#pragma once

#include <nccl.h>

#include "recorder/recorder.h"

namespace ncclrec::interpose {

// Frames of the shim between the user's call site and Recorder::begin: the exported wrapper.
inline constexpr int kShimFrames = 1;

// Re-entry guard: libnccl calls some of its own exports through the PLT (ncclBcast ->
// ncclBroadcast), which lands back in the shim; only the outermost call is recorded.
class ReentryGuard {
 public:
  ReentryGuard() { ++depth_; }
  ~ReentryGuard() { --depth_; }
  ReentryGuard(const ReentryGuard&) = delete;
  ReentryGuard& operator=(const ReentryGuard&) = delete;
  bool nested() const { return depth_ > 1; }
  // How many shim wrappers the calling thread is inside (0: the call did not come through them).
  static int depth() { return depth_; }

 private:
  static thread_local int depth_ __attribute__((tls_model("initial-exec")));
};

// The shim's recorded call in progress on this thread, for NCCL's profiler callbacks raised inside
// it (profiler_plugin.cc): they take over its completion instead of recording it again.
class CurrentCall {
 public:
  explicit CurrentCall(recorder::CallHandle* call) : prev_(current_) { current_ = call; }
  ~CurrentCall() { current_ = prev_; }
  CurrentCall(const CurrentCall&) = delete;
  CurrentCall& operator=(const CurrentCall&) = delete;
  static recorder::CallHandle* get() { return current_; }

 private:
  recorder::CallHandle* prev_;
  static thread_local recorder::CallHandle* current_ __attribute__((tls_model("initial-exec")));
};

// NCCLREC_COMPLETION=profiler: before the process's first communicator init, makes the shim
// NCCL's profiler plugin (NCCL_PROFILER_PLUGIN=STATIC_PLUGIN) unless the user chose one.
void selectProfilerPlugin();

// Records `args` around `forward()`; `after(recorder, call, result)` runs after the real call
// (comm registration and the like), before the event is completed.
template <class Forward, class After>
__attribute__((always_inline)) inline ncclResult_t recordCall(const recorder::OpArgs& args,
                                                              Forward&& forward, After&& after) {
  ReentryGuard guard;
  recorder::Recorder* r = guard.nested() ? nullptr : recorder::Recorder::get();
  if (r == nullptr) return forward();
  recorder::CallHandle call = r->begin(args, kShimFrames);
  CurrentCall current(&call);
  const ncclResult_t result = forward();
  after(r, call, result);
  r->end(call, result);
  return result;
}

template <class Forward>
__attribute__((always_inline)) inline ncclResult_t recordCall(const recorder::OpArgs& args,
                                                              Forward&& forward) {
  return recordCall(args, forward, [](recorder::Recorder*, recorder::CallHandle&, ncclResult_t) {});
}

}  // namespace ncclrec::interpose

// Inside a wrapper: the real function, or an early return when the loaded NCCL lacks it.
#define NCCLREC_REAL_OR_RETURN(name)                          \
  const auto real_fn = ::ncclrec::interpose::realNccl().name; \
  if (real_fn == nullptr) return ::ncclrec::interpose::missingFunction(#name)

#define NCCLREC_EXPORT extern "C" __attribute__((visibility("default")))
