// A communicator one rank never joins: after warmup every rank is meant to build an evaluation
// communicator of all ranks. Each rank decides from its own copy of the run config whether
// evaluation is on; rank 3's copy was written before the option existed, so it skips the
// creation and goes on to the next training all-reduce. ncclCommInitRank is collective over the
// new communicator's members: ranks 0-2 wait in it for rank 3, and rank 3 waits in the
// all-reduce for them.
// Fix (healthy): every member of a communicator creates it; decide membership from one config
// that every rank reads alike (or broadcast the decision from rank 0 first).
#include <vector>

#include "samples/common/sample.h"

namespace {

constexpr int kSteps = 4;
constexpr int kWarmupSteps = 2;

__attribute__((noinline)) void trainStep(ncclComm_t comm, std::vector<float>& grads) {
  CHECK_NCCL(
      ncclAllReduce(grads.data(), grads.data(), grads.size(), ncclFloat, ncclSum, comm, nullptr));
}

__attribute__((noinline)) ncclComm_t buildEvalGroup(const samples::Job& job) {
  return samples::initComm(job.rank, job.world, samples::uniqueIdPath("init_missing_rank", "eval"));
}

}  // namespace

int main(int argc, char** argv) {
  samples::Job job = samples::start(argc, argv, "init_missing_rank");
  const bool eval_enabled = job.healthy || job.rank != 3;
  std::vector<float> grads(4096, 1.0f);
  ncclComm_t eval = nullptr;
  for (int step = 0; step < kSteps; ++step) {
    if (step == kWarmupSteps && eval_enabled) eval = buildEvalGroup(job);
    trainStep(job.comm, grads);
  }
  if (eval != nullptr) CHECK_NCCL(ncclCommDestroy(eval));
  samples::finish(job);
  return 0;
}
