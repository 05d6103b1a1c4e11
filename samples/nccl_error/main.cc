// An NCCL call that fails: gradients are averaged with a custom reduction, ncclRedOpCreatePreMulSum
// (multiply by 1/world, then sum). Rank 2 rebuilds its optimizer state at step 3 and destroys the
// op with it, but keeps using the stale handle: its next all-reduce returns ncclInvalidArgument.
// The program stops on the error, as it should; the other ranks wait in that all-reduce for rank 2
// (on GPUs they hang until NCCL's own timeout; on hostnccl the closed connections fail them).
// Fix (healthy): the op lives as long as the communicator that uses it.
#include <vector>

#include "samples/common/sample.h"

namespace {

constexpr int kSteps = 6;
constexpr int kRebuildStep = 3;

__attribute__((noinline)) void averageGradients(ncclComm_t comm, std::vector<float>& grads,
                                                ncclRedOp_t average) {
  CHECK_NCCL(
      ncclAllReduce(grads.data(), grads.data(), grads.size(), ncclFloat, average, comm, nullptr));
}

ncclRedOp_t makeAverage(ncclComm_t comm, float* scale) {
  ncclRedOp_t op{};
  CHECK_NCCL(ncclRedOpCreatePreMulSum(&op, scale, ncclFloat, ncclScalarHostImmediate, comm));
  return op;
}

}  // namespace

int main(int argc, char** argv) {
  samples::Job job = samples::start(argc, argv, "nccl_error");
  float scale = 1.0f / static_cast<float>(job.world);
  ncclRedOp_t average = makeAverage(job.comm, &scale);
  std::vector<float> grads(4096, 1.0f);
  for (int step = 0; step < kSteps; ++step) {
    if (step == kRebuildStep && job.rank == 2) {
      CHECK_NCCL(ncclRedOpDestroy(average, job.comm));  // with the old optimizer state
      if (job.healthy) average = makeAverage(job.comm, &scale);
    }
    averageGradients(job.comm, grads, average);
  }
  CHECK_NCCL(ncclRedOpDestroy(average, job.comm));
  samples::finish(job);
  return 0;
}
