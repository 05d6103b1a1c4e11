// The collectives of the training loop outside backward: the per-step statistics, the decision to
// stop, and the checkpoint barrier. Each is issued directly by the function named here, so a
// verdict names it as the call site (see checkNccl in nccl_setup.h).
//
// Per step every rank issues, in this order: the gradient buckets' all-reduces (grad_comm.h),
// syncStepStats, agreeOnStop; after an evaluation step, evaluate's all-reduce (train.cc); after a
// checkpoint step, saveCheckpoint's barrier. NCCL pairs collectives by issue order, so this order
// is the contract the fault injections break.
#pragma once

#include <nccl.h>

#include <string>

#include "trainer/checkpoint_file.h"

namespace ncclrec::trainer {

struct StepStats {
  double loss_sum = 0;  // sum over the step's samples of the per-sample loss
  double samples = 0;
};

// The job-wide sums (ncclAllReduce of two float64, sum). Rank 0 prints loss_sum / samples.
StepStats syncStepStats(ncclComm_t comm, const StepStats& local);

// Rank 0's decision, broadcast (one int32) so every rank leaves the loop after the same step
// even when only rank 0's clock (--time-limit) says stop.
bool agreeOnStop(ncclComm_t comm, bool rank0_says_stop);

// Rank 0 writes `checkpoint` to `path` (atomically: checkpoint_file.h); then every rank waits at
// a barrier (an all-reduce of one float), so that no rank runs ahead of a checkpoint that may be
// needed to restart it. Rank 0 throws std::runtime_error after the barrier when it could not
// write (the others then fail at their next collective). `checkpoint` is read on rank 0 only.
// `gated_bug`: the injected gated_save bug, an extra all-reduce of the saved byte count issued
// on this rank only.
void saveCheckpoint(ncclComm_t comm, int rank, const std::string& path,
                    const Checkpoint* checkpoint, bool gated_bug);

}  // namespace ncclrec::trainer
