// Mismatched roots: every few steps the batch-norm buffers are re-synchronized by broadcasting
// them from the rank that holds the reference copy. Which rank that is comes from each rank's
// config; the last rank's says rank 1 while everyone else's says rank 0. The last rank waits for
// rank 1's data while the others exchange rank 0's: the broadcast cannot pair, every rank waits.
// Fix (healthy): the root is a job-wide constant (or decided once and broadcast from rank 0).
#include <vector>

#include "samples/common/sample.h"

namespace {

constexpr int kSteps = 6;
constexpr int kSyncEvery = 3;

__attribute__((noinline)) void trainStep(ncclComm_t comm, std::vector<float>& grads) {
  CHECK_NCCL(
      ncclAllReduce(grads.data(), grads.data(), grads.size(), ncclFloat, ncclSum, comm, nullptr));
}

__attribute__((noinline)) void syncBuffers(ncclComm_t comm, std::vector<float>& buffers, int root) {
  CHECK_NCCL(ncclBroadcast(buffers.data(), buffers.data(), buffers.size(), ncclFloat, root, comm,
                           nullptr));
}

}  // namespace

int main(int argc, char** argv) {
  samples::Job job = samples::start(argc, argv, "root_mismatch");
  const int reference_rank = !job.healthy && job.rank == job.world - 1 ? 1 : 0;
  std::vector<float> grads(4096, 1.0f);
  std::vector<float> buffers(256, static_cast<float>(job.rank));
  for (int step = 1; step <= kSteps; ++step) {
    trainStep(job.comm, grads);
    if (step % kSyncEvery == 0) syncBuffers(job.comm, buffers, reference_rank);
  }
  samples::finish(job);
  return 0;
}
