// Mismatched datatypes: after warmup, gradients are compressed to fp16 before the all-reduce, on
// the ranks whose environment enables compression. Only rank 1's node exports the flag, so rank 1
// all-reduces 4096 halves while the others all-reduce 4096 floats: same count, other datatype,
// and the collective never completes.
// Fix (healthy): compression is a job-wide setting, decided once (by rank 0, broadcast).
#include <cstdint>
#include <vector>

#include "samples/common/sample.h"

namespace {

constexpr int kSteps = 6;
constexpr int kWarmupSteps = 2;
constexpr size_t kParams = 4096;

__attribute__((noinline)) void allReduceGradients(ncclComm_t comm, std::vector<float>& grads,
                                                  bool compress) {
  if (compress) {
    std::vector<uint16_t> half(grads.size(), 0x3c00);  // 1.0 in fp16
    CHECK_NCCL(
        ncclAllReduce(half.data(), half.data(), half.size(), ncclFloat16, ncclSum, comm, nullptr));
    return;
  }
  CHECK_NCCL(
      ncclAllReduce(grads.data(), grads.data(), grads.size(), ncclFloat, ncclSum, comm, nullptr));
}

}  // namespace

int main(int argc, char** argv) {
  samples::Job job = samples::start(argc, argv, "dtype_mismatch");
  const bool compression_flag = !job.healthy && job.rank == 1;
  std::vector<float> grads(kParams, 1.0f);
  for (int step = 0; step < kSteps; ++step) {
    allReduceGradients(job.comm, grads, compression_flag && step >= kWarmupSteps);
  }
  samples::finish(job);
  return 0;
}
