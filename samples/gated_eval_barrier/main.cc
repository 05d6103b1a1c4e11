// Evaluation runs on rank 0 only, and ends in a barrier "so that everyone sees the same model
// afterwards": a collective gated on rank == 0. NCCL has no barrier; a barrier is an all-reduce of
// one element (torch.distributed.barrier is), and it meets the other ranks' next gradient
// all-reduce, which has another shape: rank 0 waits in evaluate(), the others in trainStep().
// Fix (healthy): every rank evaluates its share and reaches the barrier.
#include <vector>

#include "samples/common/sample.h"

namespace {

constexpr int kSteps = 6;
constexpr int kEvalEvery = 3;

__attribute__((noinline)) void trainStep(ncclComm_t comm, std::vector<float>& grads) {
  CHECK_NCCL(
      ncclAllReduce(grads.data(), grads.data(), grads.size(), ncclFloat, ncclSum, comm, nullptr));
}

__attribute__((noinline)) float evaluate(ncclComm_t comm, const std::vector<float>& weights) {
  float accuracy = 0;
  for (float w : weights) accuracy += w;
  int token = 1;  // the barrier
  CHECK_NCCL(ncclAllReduce(&token, &token, 1, ncclInt32, ncclSum, comm, nullptr));
  return accuracy / static_cast<float>(weights.size());
}

}  // namespace

int main(int argc, char** argv) {
  samples::Job job = samples::start(argc, argv, "gated_eval_barrier");
  std::vector<float> grads(4096, 1.0f);
  for (int step = 1; step <= kSteps; ++step) {
    trainStep(job.comm, grads);
    if (step % kEvalEvery == 0 && (job.healthy || job.rank == 0)) {
      std::printf("rank %d: step %d accuracy %.3f\n", job.rank, step, evaluate(job.comm, grads));
    }
  }
  samples::finish(job);
  return 0;
}
