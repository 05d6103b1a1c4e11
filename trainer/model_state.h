// The trainer's model and optimizer state as a checkpoint and back (checkpoint_file.h holds the
// file format): parameters as "param/<name>", SGD momentum as "momentum/<name>". A LibTorch
// translation unit of its own (train.cc's other half).
#pragma once

#include <ATen/ATen.h>
#include <torch/optim/sgd.h>

#include <cstdint>
#include <vector>

#include "trainer/checkpoint_file.h"
#include "trainer/ddp.h"

namespace ncclrec::trainer {

// The tensor's values on the CPU, in order.
std::vector<float> toVector(const at::Tensor& t);

// Every parameter, and its momentum where the optimizer has taken a step.
Checkpoint stateToCheckpoint(int64_t step, uint64_t fingerprint, const DataParallel& ddp,
                             torch::optim::SGD& optimizer);

// Puts the checkpoint's parameters and momenta back (on `device`). Throws std::runtime_error,
// naming the tensor, when a parameter is missing or a shape differs.
void restoreState(const Checkpoint& ckpt, const DataParallel& ddp, torch::optim::SGD& optimizer,
                  const torch::Device& device);

}  // namespace ncclrec::trainer
