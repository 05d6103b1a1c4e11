// A NaN guard on one rank: rank 3 meets a batch whose loss is NaN and, to protect its weights,
// skips backward and with it the gradient all-reduce, then logs the loss like every rank does.
// NCCL pairs by issue order: rank 3's loss all-reduce meets the others' gradient all-reduce (other
// shape), so every rank waits. The skip is the bug: a collective must be issued by every rank.
// Fix (healthy): decide to skip together (all-reduce a "bad batch" flag with ncclMax first), or
// issue the all-reduce anyway with zeroed gradients.
#include <cmath>
#include <limits>
#include <vector>

#include "samples/common/sample.h"

namespace {

constexpr int kSteps = 6;
constexpr int kBadStep = 3;

__attribute__((noinline)) void allReduceGradients(ncclComm_t comm, std::vector<float>& grads) {
  CHECK_NCCL(
      ncclAllReduce(grads.data(), grads.data(), grads.size(), ncclFloat, ncclSum, comm, nullptr));
}

__attribute__((noinline)) void logLoss(ncclComm_t comm, float* loss) {
  CHECK_NCCL(ncclAllReduce(loss, loss, 1, ncclFloat, ncclSum, comm, nullptr));
}

__attribute__((noinline)) bool anyRankBad(ncclComm_t comm, bool bad) {
  int flag = bad ? 1 : 0;
  CHECK_NCCL(ncclAllReduce(&flag, &flag, 1, ncclInt32, ncclMax, comm, nullptr));
  return flag != 0;
}

}  // namespace

int main(int argc, char** argv) {
  samples::Job job = samples::start(argc, argv, "nan_skip");
  std::vector<float> grads(4096, 0.5f);
  for (int step = 0; step < kSteps; ++step) {
    const bool bad_batch = job.rank == job.world - 1 && step == kBadStep;
    float loss = bad_batch ? std::numeric_limits<float>::quiet_NaN() : 1.0f / (step + 1);
    const bool skip = job.healthy ? anyRankBad(job.comm, std::isnan(loss)) : std::isnan(loss);
    if (skip) {
      std::printf("rank %d: step %d: NaN loss, skipping backward\n", job.rank, step);
      if (job.healthy) loss = 0;
    } else {
      allReduceGradients(job.comm, grads);
    }
    logLoss(job.comm, &loss);
  }
  samples::finish(job);
  return 0;
}
