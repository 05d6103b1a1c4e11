// A rank stuck in host code, spinning: the last rank busy-waits for a flag that a weight loader
// should set, but the loader skipped it on an error path. The thread runs at full speed (state R)
// and never reaches its next NCCL call; the others wait in the gradient all-reduce. Its thread
// snapshot catches it inside the spin.
// Fix (healthy): the loader sets the flag on every path. In real jobs: never spin without a
// deadline; a condition variable or a timeout would have said so.
#include <atomic>
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

// Waits for the loader by polling the flag: no sleep, no syscall.
__attribute__((noinline)) void waitForWeights(const std::atomic<bool>& ready) {
  while (!ready.load(std::memory_order_acquire)) {
  }
}

__attribute__((noinline)) float loadWeights(bool error_path) {
  std::atomic<bool> ready{false};
  std::thread loader([&] {
    if (error_path) return;  // the bug: returns without setting the flag
    ready.store(true, std::memory_order_release);
  });
  loader.join();
  waitForWeights(ready);
  return 1.0f;
}

}  // namespace

int main(int argc, char** argv) {
  samples::Job job = samples::start(argc, argv, "host_spin");
  std::vector<float> grads(4096, 1.0f);
  for (int step = 0; step < kSteps; ++step) {
    grads[0] = loadWeights(!job.healthy && job.rank == job.world - 1 && step == kBadStep);
    trainStep(job.comm, grads);
  }
  samples::finish(job);
  return 0;
}
