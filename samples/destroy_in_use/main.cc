// ncclCommDestroy on one rank while the others still use the communicator: every rank has a
// world communicator for gradients and a second one, over the same ranks, for evaluation. Each
// rank evaluates for as many batches as its own shard of the validation set holds and then frees
// the evaluation communicator; rank 1's shard is one batch shorter, so it destroys the
// communicator and goes back to training while ranks 0, 2 and 3 issue one more evaluation
// all-reduce on it. With NCCL they wait forever (hostnccl: their all-reduce fails when rank 1's
// connections close).
// Fix (healthy): every rank runs the same number of evaluation steps (pad the shards, or
// all-reduce the count first) and destroys the communicator only after the last one.
#include <vector>

#include "samples/common/sample.h"

namespace {

constexpr int kSteps = 3;
constexpr int kEvalBatches = 4;

__attribute__((noinline)) void trainStep(ncclComm_t comm, std::vector<float>& grads) {
  CHECK_NCCL(
      ncclAllReduce(grads.data(), grads.data(), grads.size(), ncclFloat, ncclSum, comm, nullptr));
}

__attribute__((noinline)) void evalBatch(ncclComm_t eval, float* metric) {
  CHECK_NCCL(ncclAllReduce(metric, metric, 1, ncclFloat, ncclSum, eval, nullptr));
}

__attribute__((noinline)) void finishEvaluation(ncclComm_t eval) {
  CHECK_NCCL(ncclCommDestroy(eval));
}

}  // namespace

int main(int argc, char** argv) {
  samples::Job job = samples::start(argc, argv, "destroy_in_use");
  ncclComm_t eval = nullptr;
  CHECK_NCCL(ncclCommSplit(job.comm, 0, job.rank, &eval, nullptr));
  std::vector<float> grads(4096, 1.0f);
  const int batches = !job.healthy && job.rank == 1 ? kEvalBatches - 1 : kEvalBatches;
  trainStep(job.comm, grads);
  for (int b = 0; b < batches; ++b) {
    float metric = 1.0f;
    evalBatch(eval, &metric);
  }
  finishEvaluation(eval);
  for (int step = 0; step < kSteps; ++step) trainStep(job.comm, grads);
  samples::finish(job);
  return 0;
}
