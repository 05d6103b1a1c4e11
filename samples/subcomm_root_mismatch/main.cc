// A broadcast root given in the wrong communicator's numbering: rank 0 is the evaluator; ranks 1-3
// form the training sub-communicator (ncclCommSplit, rank 0 passes NCCL_SPLIT_NOCOLOR). Every few
// steps the trainers broadcast the embedding table from their group's leader. Ranks 1 and 2 pass
// the leader's rank in the sub-communicator (0); rank 3 passes its global rank (1), which in the
// sub-communicator is rank 2. The broadcast cannot pair; the trainers wait in it and the evaluator
// waits for them in the next world all-reduce.
// Fix (healthy): roots are ranks of the communicator the collective runs on.
#include <vector>

#include "samples/common/sample.h"

namespace {

constexpr int kSteps = 6;
constexpr int kSyncEvery = 3;
constexpr int kLeaderGlobalRank = 1;

__attribute__((noinline)) void trainStep(ncclComm_t comm, std::vector<float>& grads) {
  CHECK_NCCL(
      ncclAllReduce(grads.data(), grads.data(), grads.size(), ncclFloat, ncclSum, comm, nullptr));
}

__attribute__((noinline)) void syncEmbeddings(ncclComm_t comm, std::vector<float>& table,
                                              int root) {
  CHECK_NCCL(
      ncclBroadcast(table.data(), table.data(), table.size(), ncclFloat, root, comm, nullptr));
}

__attribute__((noinline)) void shareMetrics(ncclComm_t world, float* value) {
  CHECK_NCCL(ncclAllReduce(value, value, 1, ncclFloat, ncclMax, world, nullptr));
}

}  // namespace

int main(int argc, char** argv) {
  samples::Job job = samples::start(argc, argv, "subcomm_root_mismatch");
  const bool trainer = job.rank != 0;
  ncclComm_t trainers = nullptr;
  CHECK_NCCL(
      ncclCommSplit(job.comm, trainer ? 1 : NCCL_SPLIT_NOCOLOR, job.rank, &trainers, nullptr));
  // The leader's rank in the trainers' communicator is 0; rank 3 uses its global rank.
  const int leader = !job.healthy && job.rank == 3 ? kLeaderGlobalRank : 0;
  std::vector<float> grads(4096, 1.0f), table(512, static_cast<float>(job.rank));
  for (int step = 1; step <= kSteps; ++step) {
    if (trainer) {
      trainStep(trainers, grads);
      if (step % kSyncEvery == 0) syncEmbeddings(trainers, table, leader);
    }
    float value = static_cast<float>(step);
    shareMetrics(job.comm, &value);
  }
  if (trainer) CHECK_NCCL(ncclCommDestroy(trainers));
  samples::finish(job);
  return 0;
}
