// A straggler, not a hang: rank 2 reads its batches from a slow disk and spends 40 ms more per
// step than the others, so every gradient all-reduce waits for it and the whole job runs at its
// pace. Nothing times out; the job finishes, and the recordings show who was last each time.
// Fix (healthy): the same reads take as long on every rank (in real jobs: prefetch, faster
// storage, or move the rank off the slow node).
#include <chrono>
#include <thread>
#include <vector>

#include "samples/common/sample.h"

namespace {

constexpr int kSteps = 12;

__attribute__((noinline)) void loadBatch(bool slow_disk) {
  std::this_thread::sleep_for(std::chrono::milliseconds(slow_disk ? 45 : 5));
}

__attribute__((noinline)) void trainStep(ncclComm_t comm, std::vector<float>& grads) {
  CHECK_NCCL(
      ncclAllReduce(grads.data(), grads.data(), grads.size(), ncclFloat, ncclSum, comm, nullptr));
}

}  // namespace

int main(int argc, char** argv) {
  samples::Job job = samples::start(argc, argv, "slow_rank");
  const bool slow_disk = !job.healthy && job.rank == 2;
  std::vector<float> grads(4096, 1.0f);
  for (int step = 0; step < kSteps; ++step) {
    loadBatch(slow_disk);
    trainStep(job.comm, grads);
  }
  samples::finish(job);
  return 0;
}
