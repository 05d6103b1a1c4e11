// One more op in a group that spans two communicators: ranks are paired (0-1, 2-3) for tensor
// parallelism; each step issues the pair's activation all-reduce and the world's gradient
// all-reduce together, in one ncclGroupStart/End. Rank 1's config turns on gradient-norm logging,
// which adds a one-element all-reduce of the norm to the world communicator inside the same group.
// That op meets the other ranks' next gradient all-reduce (another size): the world communicator
// cannot pair and every rank waits.
// Fix (healthy): what a group issues must not depend on per-rank config; log the norm on every
// rank or on none.
#include <vector>

#include "samples/common/sample.h"

namespace {

constexpr int kSteps = 5;
constexpr int kLogFromStep = 2;

__attribute__((noinline)) void reduceActivations(ncclComm_t tp, std::vector<float>& act) {
  CHECK_NCCL(ncclAllReduce(act.data(), act.data(), act.size(), ncclFloat, ncclSum, tp, nullptr));
}

__attribute__((noinline)) void reduceGradients(ncclComm_t dp, std::vector<float>& grads) {
  CHECK_NCCL(
      ncclAllReduce(grads.data(), grads.data(), grads.size(), ncclFloat, ncclSum, dp, nullptr));
}

__attribute__((noinline)) void logGradNorm(ncclComm_t dp, float* norm) {
  CHECK_NCCL(ncclAllReduce(norm, norm, 1, ncclFloat, ncclSum, dp, nullptr));
}

}  // namespace

int main(int argc, char** argv) {
  samples::Job job = samples::start(argc, argv, "group_extra_op");
  ncclComm_t tp = nullptr;
  CHECK_NCCL(ncclCommSplit(job.comm, job.rank / 2, job.rank, &tp, nullptr));
  const bool log_norm = !job.healthy && job.rank == 1;
  std::vector<float> act(1024, 1.0f), grads(4096, 1.0f);
  for (int step = 0; step < kSteps; ++step) {
    float norm = 1.0f;
    CHECK_NCCL(ncclGroupStart());
    reduceActivations(tp, act);
    reduceGradients(job.comm, grads);
    if (log_norm && step >= kLogFromStep) logGradNorm(job.comm, &norm);
    CHECK_NCCL(ncclGroupEnd());
  }
  CHECK_NCCL(ncclCommDestroy(tp));
  samples::finish(job);
  return 0;
}
