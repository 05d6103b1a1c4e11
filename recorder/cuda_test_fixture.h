// The fixture of the CudaCompletion tests (cuda_completion_test.cc, cuda_markers_test.cc): the
// fake CUDA driver of tests/support, opened as the code under test opens it, and a sink that
// records what poll() reports.
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>

#include "recorder/cuda_completion.h"

// Path of the fake driver (tests/support/fake_cuda.cc), set by the build.
#ifndef NCCLREC_TEST_FAKE_CUDA
#error "NCCLREC_TEST_FAKE_CUDA must name the fake libcuda.so.1"
#endif

namespace ncclrec::recorder {

struct FakeCudaStats {
  uint64_t created;
  uint64_t destroyed;
  uint64_t live;
  uint64_t records;
  uint64_t timing_events;
};

// The fake's control API, reached through the same dlopen handle the code under test gets.
struct FakeCuda {
  void (*reset)();
  void* (*defaultContext)();
  void (*setStreamContext)(void*, void*);
  void (*setStreamBlocked)(void*, int);
  void (*setStreamCapturing)(void*, int);
  void (*setCurrentContext)(void*);
  int (*threadCaptureMode)();
  void (*failEventRecords)(int);
  void (*setQueryError)(int);
  void (*setQueryNeedsContext)(int);
  void (*getStats)(FakeCudaStats*);
  int (*ctxGetCurrent)(void**);
  long long (*callCount)(const char*);
  unsigned long long (*threadCalls)();
  void (*resetThreadCalls)();
  void (*advanceStream)(void*, int);

  FakeCudaStats stats() const {
    FakeCudaStats s{};
    getStats(&s);
    return s;
  }
};

template <typename Fn>
inline void bind(void* handle, const char* name, Fn* fn) {
  *fn = reinterpret_cast<Fn>(dlsym(handle, name));
  ASSERT_NE(*fn, nullptr) << name;
}

inline void* stream(uintptr_t n) { return reinterpret_cast<void*>(0x10000 + n * 16); }

struct Observed {
  int started = 0;
  int completed = 0;
  int lost = 0;
  int captured = 0;
  bool started_before_completed = true;
};

class RecordingSink : public CudaCompletion::Sink {
 public:
  void captured(uint64_t event_index, int64_t now_ns) override { ++ops[event_index].captured; }
  void started(uint64_t event_index, int64_t now_ns) override {
    EXPECT_GT(now_ns, 0);
    ++ops[event_index].started;
  }
  void completed(uint64_t event_index, int64_t now_ns) override {
    Observed& o = ops[event_index];
    if (o.started == 0) o.started_before_completed = false;
    ++o.completed;
  }
  void lost(uint64_t event_index, int cu_result, int64_t now_ns) override {
    ++ops[event_index].lost;
    last_lost_result = cu_result;
  }
  std::map<uint64_t, Observed> ops;
  int last_lost_result = 0;
};

class CudaCompletionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("FAKE_CUDA_FAIL_INIT");
    unsetenv(CudaCompletion::kLibraryEnv);
    handle_ = dlopen(NCCLREC_TEST_FAKE_CUDA, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    bind(handle_, "fakeCudaReset", &fake_.reset);
    bind(handle_, "fakeCudaDefaultContext", &fake_.defaultContext);
    bind(handle_, "fakeCudaSetStreamContext", &fake_.setStreamContext);
    bind(handle_, "fakeCudaSetStreamBlocked", &fake_.setStreamBlocked);
    bind(handle_, "fakeCudaSetStreamCapturing", &fake_.setStreamCapturing);
    bind(handle_, "fakeCudaSetCurrentContext", &fake_.setCurrentContext);
    bind(handle_, "fakeCudaThreadCaptureMode", &fake_.threadCaptureMode);
    bind(handle_, "fakeCudaFailEventRecords", &fake_.failEventRecords);
    bind(handle_, "fakeCudaSetQueryError", &fake_.setQueryError);
    bind(handle_, "fakeCudaSetQueryNeedsContext", &fake_.setQueryNeedsContext);
    bind(handle_, "fakeCudaGetStats", &fake_.getStats);
    bind(handle_, "cuCtxGetCurrent", &fake_.ctxGetCurrent);
    bind(handle_, "fakeCudaCallCount", &fake_.callCount);
    bind(handle_, "fakeCudaThreadCalls", &fake_.threadCalls);
    bind(handle_, "fakeCudaResetThreadCalls", &fake_.resetThreadCalls);
    bind(handle_, "fakeCudaAdvanceStream", &fake_.advanceStream);
    fake_.reset();
  }
  void TearDown() override {
    if (handle_ != nullptr) dlclose(handle_);
  }

  // The pool mechanics tests (cuda_completion_test.cc) run with start markers, whose events they
  // count; cuda_markers_test.cc covers the default, end markers only.
  std::unique_ptr<CudaCompletion> make(
      uint32_t max_pending,
      CudaCompletion::Markers markers = CudaCompletion::Markers::kStartAndEnd) {
    std::string why;
    auto cc = CudaCompletion::create(max_pending, NCCLREC_TEST_FAKE_CUDA, &why, markers);
    EXPECT_NE(cc, nullptr) << why;
    return cc;
  }

  void* handle_ = nullptr;
  FakeCuda fake_{};
};

}  // namespace ncclrec::recorder
