#include "trainer/step_sync.h"

#include <cstdint>
#include <stdexcept>

#include "trainer/nccl_setup.h"

namespace ncclrec::trainer {

// noinline throughout: each function is a distinct call site in the recorded stacks.

__attribute__((noinline)) StepStats syncStepStats(ncclComm_t comm, const StepStats& local) {
  double sums[2] = {local.loss_sum, local.samples};
  checkNccl(ncclAllReduce(sums, sums, 2, ncclFloat64, ncclSum, comm, nullptr), comm,
            "ncclAllReduce in syncStepStats");
  return StepStats{sums[0], sums[1]};
}

__attribute__((noinline)) bool agreeOnStop(ncclComm_t comm, bool rank0_says_stop) {
  int32_t stop = rank0_says_stop ? 1 : 0;
  checkNccl(ncclBroadcast(&stop, &stop, 1, ncclInt32, 0, comm, nullptr), comm,
            "ncclBroadcast in agreeOnStop");
  return stop != 0;
}

__attribute__((noinline)) void saveCheckpoint(ncclComm_t comm, int rank, const std::string& path,
                                              const Checkpoint* checkpoint, bool gated_bug) {
  base::Status written = base::okStatus();
  float saved_bytes = 0;
  if (rank == 0) {
    written = writeCheckpointFile(path, *checkpoint);
    for (const CheckpointTensor& t : checkpoint->tensors) saved_bytes += 4.0f * t.data.size();
  }
  if (gated_bug) {
    // The injected bug: "log the bytes saved across the job" with an all-reduce that only this
    // rank reaches. It pairs with the other ranks' barrier below, and the job hangs one
    // collective later.
    checkNccl(ncclAllReduce(&saved_bytes, &saved_bytes, 1, ncclFloat, ncclSum, comm, nullptr), comm,
              "ncclAllReduce in saveCheckpoint");
  }
  // The barrier: one element, its value unused.
  float token = 0;
  checkNccl(ncclAllReduce(&token, &token, 1, ncclFloat, ncclSum, comm, nullptr), comm,
            "ncclAllReduce (barrier) in saveCheckpoint");
  if (!written.ok()) throw std::runtime_error(written.message());
}

}  // namespace ncclrec::trainer
