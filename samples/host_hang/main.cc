// A rank stuck in host code: the last rank waits for a prefetch thread to hand it the next batch,
// but the thread died on a missing file without telling anyone, so the condition is never
// signalled. The process is alive (its recorder still beats), it just never reaches its next NCCL
// call; the others wait in the gradient all-reduce.
// Fix (healthy): the prefetcher finds its file. In real jobs: report a worker's failure, wait with
// a timeout and fail loudly; the stuck rank's stack (gdb, py-spy) shows where it waits.
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "samples/common/sample.h"

namespace {

constexpr int kSteps = 6;
constexpr int kBadStep = 3;

__attribute__((noinline)) void trainStep(ncclComm_t comm, std::vector<float>& grads) {
  CHECK_NCCL(
      ncclAllReduce(grads.data(), grads.data(), grads.size(), ncclFloat, ncclSum, comm, nullptr));
}

// The prefetcher of one batch: it returns without setting `ready` when its shard file is missing.
__attribute__((noinline)) float nextBatch(bool file_missing) {
  std::mutex m;
  std::condition_variable cv;
  bool ready = false;
  float value = 0;
  std::thread prefetch([&] {
    if (file_missing) return;  // the bug: dies silently
    const std::lock_guard<std::mutex> lock(m);
    value = 1.0f;
    ready = true;
    cv.notify_one();
  });
  std::unique_lock<std::mutex> lock(m);
  cv.wait(lock, [&] { return ready; });
  lock.unlock();
  prefetch.join();
  return value;
}

}  // namespace

int main(int argc, char** argv) {
  samples::Job job = samples::start(argc, argv, "host_hang");
  std::vector<float> grads(4096, 1.0f);
  for (int step = 0; step < kSteps; ++step) {
    grads[0] = nextBatch(!job.healthy && job.rank == job.world - 1 && step == kBadStep);
    trainStep(job.comm, grads);
  }
  samples::finish(job);
  return 0;
}
