// Mismatched shapes: every rank builds the model from its own copy of the config, and the last
// rank's copy is stale (hidden size 1000 instead of 1024). Its gradient buffer has another length,
// so its all-reduce cannot pair with the others' (NCCL may hang or read past the shorter buffer;
// hostnccl blocks): every rank waits in the first gradient all-reduce.
// Fix (healthy): one config for every rank (broadcast it from rank 0), and check the parameter
// count across ranks before training, as DDP does.
#include <vector>

#include "samples/common/sample.h"

namespace {

constexpr int kSteps = 4;

int hiddenSize(bool stale_config) { return stale_config ? 1000 : 1024; }

__attribute__((noinline)) void trainStep(ncclComm_t comm, std::vector<float>& grads) {
  CHECK_NCCL(
      ncclAllReduce(grads.data(), grads.data(), grads.size(), ncclFloat, ncclSum, comm, nullptr));
}

}  // namespace

int main(int argc, char** argv) {
  samples::Job job = samples::start(argc, argv, "size_mismatch");
  const bool stale_config = !job.healthy && job.rank == job.world - 1;
  std::vector<float> grads(4 * hiddenSize(stale_config), 1.0f);
  for (int step = 0; step < kSteps; ++step) trainStep(job.comm, grads);
  samples::finish(job);
  return 0;
}
