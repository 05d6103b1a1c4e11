// Uneven inputs: the dataset is cut into contiguous shards of ceil(N / world) samples, so the last
// rank's shard is shorter. It runs out of batches, leaves the training loop and exits while the
// others enter their next gradient all-reduce, waiting for a rank that is gone.
// Fix (healthy): agree on the number of steps before the loop (an all-reduce with ncclMin of each
// rank's batch count), or pad the shards to equal length as PyTorch's DistributedSampler does.
#include <algorithm>
#include <vector>

#include "samples/common/sample.h"

namespace {

constexpr int kDatasetSize = 22;
constexpr int kBatchSize = 2;

__attribute__((noinline)) void trainStep(ncclComm_t comm, std::vector<float>& grads) {
  CHECK_NCCL(
      ncclAllReduce(grads.data(), grads.data(), grads.size(), ncclFloat, ncclSum, comm, nullptr));
}

__attribute__((noinline)) int agreeOnSteps(ncclComm_t comm, int local_steps) {
  CHECK_NCCL(ncclAllReduce(&local_steps, &local_steps, 1, ncclInt32, ncclMin, comm, nullptr));
  return local_steps;
}

}  // namespace

int main(int argc, char** argv) {
  samples::Job job = samples::start(argc, argv, "uneven_data");
  const int per_rank = (kDatasetSize + job.world - 1) / job.world;
  const int begin = std::min(kDatasetSize, job.rank * per_rank);
  const int end = std::min(kDatasetSize, begin + per_rank);
  int steps = (end - begin) / kBatchSize;
  if (job.healthy) steps = agreeOnSteps(job.comm, steps);
  std::vector<float> grads(4096, 1.0f);
  for (int step = 0; step < steps; ++step) trainStep(job.comm, grads);
  std::printf("rank %d: trained %d steps on samples [%d, %d)\n", job.rank, steps, begin, end);
  samples::finish(job);
  return 0;
}
