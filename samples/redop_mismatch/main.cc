// Mismatched reductions: two ways to average gradients, ncclAvg, or ncclSum then a division by the
// world size. Rank 2 runs a newer build of the training code that switched to ncclAvg; the others
// still pass ncclSum. Same op, count and datatype, another reduction: the ranks do not run one
// collective (NCCL may hang or reduce wrongly; hostnccl blocks), and the all-reduce never ends.
// Fix (healthy): every rank runs the same code; a version handshake at start-up catches a mixed
// deployment.
#include <vector>

#include "samples/common/sample.h"

namespace {

constexpr int kSteps = 4;

__attribute__((noinline)) void averageGradients(ncclComm_t comm, std::vector<float>& grads,
                                                int world, bool use_avg) {
  const ncclRedOp_t op = use_avg ? ncclAvg : ncclSum;
  CHECK_NCCL(ncclAllReduce(grads.data(), grads.data(), grads.size(), ncclFloat, op, comm, nullptr));
  if (!use_avg) {
    for (float& g : grads) g /= static_cast<float>(world);
  }
}

}  // namespace

int main(int argc, char** argv) {
  samples::Job job = samples::start(argc, argv, "redop_mismatch");
  const bool newer_build = !job.healthy && job.rank == 2;
  std::vector<float> grads(4096, 1.0f);
  for (int step = 0; step < kSteps; ++step)
    averageGradients(job.comm, grads, job.world, newer_build);
  samples::finish(job);
  return 0;
}
