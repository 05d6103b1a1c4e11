// A rank dies: the last rank's data loader hands it a corrupt batch, a consistency check fails and
// the process aborts (SIGABRT; a segfault or the OOM killer's SIGKILL look the same to the others).
// Its peers wait in their next gradient all-reduce for a rank that no longer exists (on GPUs they
// hang; on hostnccl the broken connections fail them at once).
// Fix (healthy): the batch is well formed. In real jobs: find why the rank died (its stderr, the
// kernel log for the OOM killer); ncclrec tells which rank and after which op.
#include <cstdlib>
#include <vector>

#include "samples/common/sample.h"

namespace {

constexpr int kSteps = 6;
constexpr int kBadStep = 3;

__attribute__((noinline)) void trainStep(ncclComm_t comm, std::vector<float>& grads) {
  CHECK_NCCL(
      ncclAllReduce(grads.data(), grads.data(), grads.size(), ncclFloat, ncclSum, comm, nullptr));
}

__attribute__((noinline)) std::vector<float> loadBatch(int rank, int step, bool corrupt) {
  std::vector<float> batch(64, 1.0f);
  if (corrupt) batch.resize(3);
  if (batch.size() != 64) {
    std::fprintf(stderr, "rank %d: batch %d has %zu samples, want 64: aborting\n", rank, step,
                 batch.size());
    std::abort();
  }
  return batch;
}

}  // namespace

int main(int argc, char** argv) {
  samples::Job job = samples::start(argc, argv, "crash");
  std::vector<float> grads(4096, 1.0f);
  for (int step = 0; step < kSteps; ++step) {
    const bool corrupt = !job.healthy && job.rank == job.world - 1 && step == kBadStep;
    const std::vector<float> batch = loadBatch(job.rank, step, corrupt);
    grads[0] = batch[0];
    trainStep(job.comm, grads);
  }
  samples::finish(job);
  return 0;
}
