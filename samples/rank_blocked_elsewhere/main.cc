// A rank blocked on another communicator: ranks 0-2 train (data-parallel communicator "train");
// rank 3 is an evaluator. Every other step rank 1 packs the weights and broadcasts them to the
// evaluator over a second communicator "handoff" (ranks 1 and 3), synchronously. The evaluator
// gets stuck evaluating the second checkpoint (a read from a hung network filesystem), so rank 1's
// next hand-off blocks, and ranks 0 and 2 wait in their gradient all-reduce for rank 1.
// Fix (healthy): the trainers never wait for the evaluator: rank 1 hands the weights off once,
// after training (in real jobs: write a checkpoint file the evaluator picks up on its own).
#include <chrono>
#include <thread>
#include <vector>

#include "samples/common/sample.h"

namespace {

constexpr int kSteps = 8;
constexpr int kHandoffEvery = 2;
constexpr int kEvaluator = 3;

__attribute__((noinline)) void trainStep(ncclComm_t train, std::vector<float>& grads) {
  CHECK_NCCL(
      ncclAllReduce(grads.data(), grads.data(), grads.size(), ncclFloat, ncclSum, train, nullptr));
}

// Rank 1 is rank 0 of the hand-off communicator: the broadcast's root.
__attribute__((noinline)) void handOffWeights(ncclComm_t handoff, std::vector<float>& weights) {
  CHECK_NCCL(ncclBroadcast(weights.data(), weights.data(), weights.size(), ncclFloat, 0, handoff,
                           nullptr));
}

__attribute__((noinline)) void evaluate(int checkpoint, bool filesystem_hangs) {
  const bool stuck = filesystem_hangs && checkpoint == 2;
  std::this_thread::sleep_for(stuck ? std::chrono::hours(1) : std::chrono::milliseconds(50));
}

}  // namespace

int main(int argc, char** argv) {
  samples::Job job = samples::start(argc, argv, "rank_blocked_elsewhere");
  const bool evaluator = job.rank == kEvaluator;
  const bool handing_off = job.rank == 1 || evaluator;
  ncclComm_t train = nullptr, handoff = nullptr;
  CHECK_NCCL(
      ncclCommSplit(job.comm, evaluator ? NCCL_SPLIT_NOCOLOR : 0, job.rank, &train, nullptr));
  CHECK_NCCL(
      ncclCommSplit(job.comm, handing_off ? 0 : NCCL_SPLIT_NOCOLOR, job.rank, &handoff, nullptr));
  std::vector<float> weights(4096, 1.0f);
  const int handoffs = job.healthy ? 1 : kSteps / kHandoffEvery;
  if (evaluator) {
    for (int c = 1; c <= handoffs; ++c) {
      CHECK_NCCL(ncclBroadcast(weights.data(), weights.data(), weights.size(), ncclFloat, 0,
                               handoff, nullptr));
      evaluate(c, !job.healthy);
    }
  } else {
    for (int step = 1; step <= kSteps; ++step) {
      trainStep(train, weights);
      if (job.rank == 1 && !job.healthy && step % kHandoffEvery == 0)
        handOffWeights(handoff, weights);
    }
    if (job.rank == 1 && job.healthy) handOffWeights(handoff, weights);
  }
  if (handoff != nullptr) CHECK_NCCL(ncclCommDestroy(handoff));
  if (train != nullptr) CHECK_NCCL(ncclCommDestroy(train));
  samples::finish(job);
  return 0;
}
