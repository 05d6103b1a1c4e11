// ncclCommSplit called by only some ranks: after warmup the job builds expert-parallel groups.
// Each rank decides from its own copy of the model config whether it hosts experts; rank 3's copy
// was written before the experts were added, so it skips the split and goes on to the next
// data-parallel all-reduce. ncclCommSplit is collective over the parent communicator: ranks 0-2
// wait in it for rank 3, and rank 3 waits in the all-reduce for them.
// Fix (healthy): every rank of the parent calls ncclCommSplit; a rank that belongs to no new
// communicator passes NCCL_SPLIT_NOCOLOR.
#include <vector>

#include "samples/common/sample.h"

namespace {

constexpr int kSteps = 4;
constexpr int kWarmupSteps = 2;

__attribute__((noinline)) void trainStep(ncclComm_t comm, std::vector<float>& grads) {
  CHECK_NCCL(
      ncclAllReduce(grads.data(), grads.data(), grads.size(), ncclFloat, ncclSum, comm, nullptr));
}

__attribute__((noinline)) ncclComm_t buildExpertGroup(ncclComm_t world, int rank) {
  ncclComm_t experts = nullptr;
  CHECK_NCCL(ncclCommSplit(world, rank % 2, rank, &experts, nullptr));
  return experts;
}

}  // namespace

int main(int argc, char** argv) {
  samples::Job job = samples::start(argc, argv, "split_subset");
  const bool hosts_experts = job.healthy || job.rank != 3;
  std::vector<float> grads(4096, 1.0f), experts_grads(1024, 1.0f);
  ncclComm_t experts = nullptr;
  for (int step = 0; step < kSteps; ++step) {
    if (step == kWarmupSteps && hosts_experts) experts = buildExpertGroup(job.comm, job.rank);
    trainStep(job.comm, grads);
    if (experts != nullptr) trainStep(experts, experts_grads);
  }
  if (experts != nullptr) CHECK_NCCL(ncclCommDestroy(experts));
  samples::finish(job);
  return 0;
}
