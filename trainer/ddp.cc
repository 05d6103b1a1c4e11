#include "trainer/ddp.h"

#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>

#include "trainer/nccl_setup.h"

namespace ncclrec::trainer {
namespace {

// Shape records exchanged by the shape check: ndim, then up to kDims sizes (a tensor of more
// dimensions has the product of the rest in the last slot).
constexpr size_t kDims = 4;
constexpr size_t kRecord = 1 + kDims;

std::vector<int64_t> shapeRecord(const at::Tensor& t) {
  std::vector<int64_t> rec(kRecord, 0);
  rec[0] = t.dim();
  for (int64_t d = 0; d < t.dim(); ++d) {
    const size_t slot = std::min<size_t>(static_cast<size_t>(d), kDims - 1);
    rec[1 + slot] = slot == static_cast<size_t>(d) ? t.size(d) : rec[1 + slot] * t.size(d);
  }
  return rec;
}

std::string shapeText(const int64_t* rec) {
  std::string s = "[";
  const auto ndim = static_cast<size_t>(rec[0]);
  for (size_t d = 0; d < std::min(ndim, kDims); ++d) {
    if (d > 0) s += ", ";
    s += std::to_string(rec[1 + d]);
  }
  return s + "]";
}

}  // namespace

DataParallel::DataParallel(std::shared_ptr<torch::nn::Module> module, ncclComm_t comm, int rank,
                           int world, int64_t bucket_cap_bytes, std::function<void()> thread_setup)
    : comm_(comm), rank_(rank), world_(world) {
  std::vector<ParamInfo> infos;
  for (const auto& item : module->named_parameters()) {
    names_.push_back(item.key());
    params_.push_back(item.value());
    infos.push_back({item.key(), item.value().numel(), item.value().element_size()});
  }
  buckets_ = planBuckets(infos, bucket_cap_bytes);
  bucket_of_.resize(params_.size());
  for (size_t b = 0; b < buckets_.size(); ++b) {
    for (size_t p : buckets_[b].params) bucket_of_[p] = b;
    flat_.push_back(at::zeros({buckets_[b].numel}, params_.front().options()));
  }
  param_ready_.assign(params_.size(), false);
  pending_.assign(buckets_.size(), 0);
  ready_.assign(buckets_.size(), false);
  comm_thread_ = std::make_unique<GradCommThread>(comm, std::move(thread_setup));
  for (size_t i = 0; i < params_.size(); ++i) {
    std::shared_ptr<torch::autograd::Node> acc =
        torch::autograd::impl::grad_accumulator(params_[i]);
    hook_keys_.push_back(
        acc->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
            [this, i](const torch::autograd::variable_list& outputs,
                      const torch::autograd::variable_list& /*inputs*/) {
              onGradientReady(i);
              return outputs;
            })));
    accumulators_.push_back(std::move(acc));
  }
}

DataParallel::~DataParallel() {
  for (size_t i = 0; i < accumulators_.size(); ++i) accumulators_[i]->del_post_hook(hook_keys_[i]);
}

__attribute__((noinline)) void DataParallel::checkParameterShapes() {
  const auto count = static_cast<int64_t>(params_.size());
  std::vector<int64_t> counts(static_cast<size_t>(world_));
  checkNccl(ncclAllGather(&count, counts.data(), 1, ncclInt64, comm_, nullptr), comm_,
            "ncclAllGather in checkParameterShapes");
  std::string problems;
  bool mine = false;
  for (int r = 1; r < world_; ++r) {
    if (counts[r] == counts[0]) continue;
    if (!problems.empty()) problems += "; ";
    problems += "rank " + std::to_string(r) + " has " + std::to_string(counts[r]) +
                " parameters, rank 0 has " + std::to_string(counts[0]);
    mine = mine || r == rank_;
  }
  if (!problems.empty()) throw ShapeMismatchError("parameter shapes differ: " + problems, mine);

  std::vector<int64_t> local;
  for (const at::Tensor& p : params_) {
    const std::vector<int64_t> rec = shapeRecord(p);
    local.insert(local.end(), rec.begin(), rec.end());
  }
  std::vector<int64_t> all(local.size() * static_cast<size_t>(world_));
  checkNccl(ncclAllGather(local.data(), all.data(), local.size(), ncclInt64, comm_, nullptr), comm_,
            "ncclAllGather in checkParameterShapes");
  for (int r = 1; r < world_; ++r) {
    const int64_t* theirs = all.data() + static_cast<size_t>(r) * local.size();
    for (size_t i = 0; i < params_.size(); ++i) {
      const int64_t* a = theirs + i * kRecord;
      const int64_t* b = all.data() + i * kRecord;
      if (std::equal(a, a + kRecord, b)) continue;
      if (!problems.empty()) problems += "; ";
      problems += "rank " + std::to_string(r) + "'s " + names_[i] + " is " + shapeText(a) +
                  ", rank 0's is " + shapeText(b);
      mine = mine || r == rank_;
      break;  // one parameter per rank says enough
    }
  }
  if (!problems.empty()) {
    throw ShapeMismatchError(
        "parameter shapes differ: " + problems + " (every rank must build the same model)", mine);
  }
}

__attribute__((noinline)) void DataParallel::broadcastParameters() {
  at::NoGradGuard no_grad;
  for (at::Tensor& p : params_) {
    checkNccl(ncclBroadcast(p.data_ptr(), p.data_ptr(), static_cast<size_t>(p.numel()), ncclFloat,
                            0, comm_, nullptr),
              comm_, "ncclBroadcast in broadcastParameters");
  }
}

void DataParallel::prepareBackward(bool sync) {
  sync_ = sync;
  if (!sync) return;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    pending_[b] = buckets_[b].params.size();
    ready_[b] = false;
  }
  param_ready_.assign(params_.size(), false);
  next_launch_ = 0;
}

void DataParallel::onGradientReady(size_t param) {
  if (!sync_) return;  // no_sync: the gradient only accumulates locally
  if (param_ready_[param]) return;
  param_ready_[param] = true;
  const size_t b = bucket_of_[param];
  if (--pending_[b] > 0) return;
  ready_[b] = true;
  // Strictly in plan order: a later bucket that is ready first waits for the earlier ones, so
  // every rank issues the all-reduces in the same order.
  while (next_launch_ < buckets_.size() && ready_[next_launch_]) {
    const Bucket& bucket = buckets_[next_launch_];
    at::Tensor& flat = flat_[next_launch_];
    for (size_t k = 0; k < bucket.params.size(); ++k) {
      const at::Tensor& p = params_[bucket.params[k]];
      flat.narrow(0, bucket.offsets[k], p.numel()).copy_(p.grad().reshape({-1}));
    }
    comm_thread_->launch(flat.data_ptr<float>(), static_cast<size_t>(bucket.numel));
    ++next_launch_;
  }
}

void DataParallel::finishGradientSync() {
  if (next_launch_ < buckets_.size()) {
    // DDP's "expected to have finished reduction": launching the rest would leave the ranks with
    // different collectives, so stop here with the name of a parameter that got no gradient.
    std::string missing;
    for (size_t p : buckets_[next_launch_].params) {
      if (!param_ready_[p] && missing.empty()) missing = names_[p];
    }
    comm_thread_->wait();
    throw std::runtime_error("parameter " + missing +
                             " got no gradient in this step: every parameter must take part in "
                             "the loss on every rank");
  }
  comm_thread_->wait();
  at::NoGradGuard no_grad;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    const Bucket& bucket = buckets_[b];
    for (size_t k = 0; k < bucket.params.size(); ++k) {
      const at::Tensor& p = params_[bucket.params[k]];
      p.grad().view({-1}).copy_(flat_[b].narrow(0, bucket.offsets[k], p.numel()));
    }
  }
  sync_ = false;
}

}  // namespace ncclrec::trainer
