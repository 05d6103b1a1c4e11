// ncclCommAbort on one rank while the others wait: each rank checks its own batch and, on a bad
// one, aborts the communicator to "fail fast" and retries the step after a pause. Only rank 2 sees
// the bad batch at step 3; the others are already in that step's all-reduce, waiting for it. With
// NCCL they wait forever for a rank that left the communicator (hostnccl: their all-reduce fails
// when the aborted rank's connections close, and rank 2's retry fails on the aborted
// communicator).
// Fix (healthy): agree on the decision first (all-reduce a "bad batch" flag and let every rank
// skip the step), or abort on every rank through the launcher's fail-fast path.
#include <chrono>
#include <thread>
#include <vector>

#include "samples/common/sample.h"

namespace {

constexpr int kSteps = 5;

__attribute__((noinline)) void trainStep(ncclComm_t comm, std::vector<float>& grads) {
  CHECK_NCCL(
      ncclAllReduce(grads.data(), grads.data(), grads.size(), ncclFloat, ncclSum, comm, nullptr));
}

__attribute__((noinline)) void handleBadBatch(ncclComm_t comm) {
  std::fprintf(stderr, "rank 2: bad batch, aborting the communicator\n");
  CHECK_NCCL(ncclCommAbort(comm));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
}

}  // namespace

int main(int argc, char** argv) {
  samples::Job job = samples::start(argc, argv, "comm_abort");
  std::vector<float> grads(4096, 1.0f);
  for (int step = 0; step < kSteps; ++step) {
    const bool bad_batch = job.rank == 2 && step == 3;
    if (bad_batch && !job.healthy) {
      handleBadBatch(job.comm);
      trainStep(job.comm, grads);  // the retry: on an aborted communicator
    }
    trainStep(job.comm, grads);
  }
  samples::finish(job);
  return 0;
}
