// Collectives in another order on one rank: each step, rank 0 broadcasts the learning rate, then
// the gradients are all-reduced. After warmup the last rank turns on "overlap", a rank-local
// option (its node's environment sets it) that all-reduces the gradients as soon as they are ready,
// before the broadcast. NCCL pairs by issue order, so one rank's all-reduce meets the others'
// broadcast: every rank waits.
// Fix (healthy): the order of collectives must not depend on rank-local settings.
#include <vector>

#include "samples/common/sample.h"

namespace {

constexpr int kSteps = 6;
constexpr int kWarmupSteps = 2;

__attribute__((noinline)) void syncLearningRate(ncclComm_t comm, float* lr) {
  CHECK_NCCL(ncclBroadcast(lr, lr, 1, ncclFloat, 0, comm, nullptr));
}

__attribute__((noinline)) void allReduceGradients(ncclComm_t comm, std::vector<float>& grads) {
  CHECK_NCCL(
      ncclAllReduce(grads.data(), grads.data(), grads.size(), ncclFloat, ncclSum, comm, nullptr));
}

}  // namespace

int main(int argc, char** argv) {
  samples::Job job = samples::start(argc, argv, "op_order");
  const bool overlap_option = !job.healthy && job.rank == job.world - 1;
  std::vector<float> grads(4096, 1.0f);
  for (int step = 0; step < kSteps; ++step) {
    float lr = 0.1f / static_cast<float>(step + 1);
    const bool overlap = overlap_option && step >= kWarmupSteps;
    if (overlap) allReduceGradients(job.comm, grads);
    syncLearningRate(job.comm, &lr);
    if (!overlap) allReduceGradients(job.comm, grads);
  }
  samples::finish(job);
  return 0;
}
