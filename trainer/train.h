// The training run of one rank: set-up (communicator, model, shape check, parameter broadcast,
// resume), the loop, evaluation, checkpoints and the fault injections. docs/trainer.md maps each
// data-parallel practice to the code that shows it.
#pragma once

#include "trainer/nccl_setup.h"
#include "trainer/options.h"

namespace ncclrec::trainer {

// Trains on this rank and returns the exit code (options.h). Failures are printed as one line
// "ncclrec-trainer: rank R: ..." on stderr; nothing throws out of it.
int runTrainer(const TrainerOptions& options, const DistEnv& env);

}  // namespace ncclrec::trainer
