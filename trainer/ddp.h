// Data parallelism for one module over the NCCL C API, the way torch.nn.parallel.
// DistributedDataParallel does it:
//   - before training, the parameter shapes are compared across ranks (a clear error instead of
//     a hang) and rank 0's parameters are broadcast to every rank;
//   - during backward, a post hook on each parameter's AccumulateGrad node marks its gradient
//     ready; a bucket (bucket_plan.h) whose gradients are all ready is packed and handed to the
//     gradient thread (grad_comm.h), buckets strictly in plan order, so the all-reduces overlap
//     the rest of backward and are issued in the same order on every rank;
//   - with gradient accumulation the hooks stay idle on all micro-steps but the last (DDP's
//     no_sync), so gradients accumulate locally and are communicated once per optimizer step.
#pragma once

#include <ATen/ATen.h>
#include <nccl.h>
#include <torch/csrc/autograd/function.h>
#include <torch/nn/module.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "trainer/bucket_plan.h"
#include "trainer/grad_comm.h"

namespace ncclrec::trainer {

// The parameter shapes differ across ranks; what() names the ranks and the parameters.
class ShapeMismatchError : public std::runtime_error {
 public:
  ShapeMismatchError(const std::string& what, bool culprit)
      : std::runtime_error(what), culprit_(culprit) {}
  // This rank's shapes differ from rank 0's.
  bool culprit() const { return culprit_; }

 private:
  bool culprit_;
};

class DataParallel {
 public:
  // Registers the gradient hooks. `thread_setup` runs first on the gradient thread. Every
  // parameter must be a float32 tensor that receives a gradient in every step.
  DataParallel(std::shared_ptr<torch::nn::Module> module, ncclComm_t comm, int rank, int world,
               int64_t bucket_cap_bytes, std::function<void()> thread_setup);
  ~DataParallel();
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  // All-gathers every rank's parameter count and shapes; throws ShapeMismatchError on every rank
  // when any rank differs from rank 0, NcclError when the gathers fail.
  void checkParameterShapes();
  // Rank 0's parameters to every rank (one ncclBroadcast per parameter, in place).
  void broadcastParameters();

  // Before each micro-step's backward. `sync`: this is the optimizer step's last micro-step, the
  // one whose hooks launch the all-reduces.
  void prepareBackward(bool sync);
  // After the last micro-step's backward: waits for every bucket and stores the averaged
  // gradients in the parameters' .grad. Throws NcclError, or std::runtime_error naming a
  // parameter that got no gradient.
  void finishGradientSync();

  const std::vector<Bucket>& buckets() const { return buckets_; }
  const std::vector<std::string>& names() const { return names_; }
  const std::vector<at::Tensor>& parameters() const { return params_; }

 private:
  void onGradientReady(size_t param);

  ncclComm_t comm_;
  int rank_;
  int world_;
  std::vector<std::string> names_;
  std::vector<at::Tensor> params_;
  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_;  // per parameter
  std::vector<at::Tensor> flat_;   // per bucket: the packed gradients, reduced in place
  // Kept alive here: a parameter's AccumulateGrad node is recreated (without our hook) when
  // nothing holds it.
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;
  std::vector<uintptr_t> hook_keys_;
  // Written by the hooks on the autograd thread during backward, read on the training thread
  // after backward returned (the engine orders the two).
  bool sync_ = false;
  std::vector<bool> param_ready_;
  std::vector<size_t> pending_;  // per bucket: gradients still missing
  std::vector<bool> ready_;
  size_t next_launch_ = 0;
  std::unique_ptr<GradCommThread> comm_thread_;
};

}  // namespace ncclrec::trainer
