#include "trainer/model_state.h"

#include <ATen/core/grad_mode.h>

#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace ncclrec::trainer {
namespace {

// LibTorch keys an optimizer's per-parameter state by the parameter's TensorImpl: by its address
// as text up to 2.x's early releases (1.13 here), by the pointer itself since (2.11 on the GPU
// machine). The map's key type says which.
template <typename StateMap>
typename StateMap::key_type stateKey(const StateMap&, const at::Tensor& p) {
  if constexpr (std::is_same_v<typename StateMap::key_type, std::string>) {
    std::ostringstream text;
    text << p.unsafeGetTensorImpl();
    return text.str();
  } else {
    return p.unsafeGetTensorImpl();
  }
}

}  // namespace

std::vector<float> toVector(const at::Tensor& t) {
  const at::Tensor c = t.detach().to(at::kCPU).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

Checkpoint stateToCheckpoint(int64_t step, uint64_t fingerprint, const DataParallel& ddp,
                             torch::optim::SGD& optimizer) {
  Checkpoint c;
  c.step = step;
  c.fingerprint = fingerprint;
  const auto& names = ddp.names();
  const auto& params = ddp.parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    const std::vector<int64_t> shape(params[i].sizes().begin(), params[i].sizes().end());
    c.tensors.push_back({"param/" + names[i], shape, toVector(params[i])});
    const auto it = optimizer.state().find(stateKey(optimizer.state(), params[i]));
    if (it == optimizer.state().end()) continue;
    const auto& state = static_cast<const torch::optim::SGDParamState&>(*it->second);
    if (state.momentum_buffer().defined()) {
      c.tensors.push_back({"momentum/" + names[i], shape, toVector(state.momentum_buffer())});
    }
  }
  return c;
}

void restoreState(const Checkpoint& ckpt, const DataParallel& ddp, torch::optim::SGD& optimizer,
                  const torch::Device& device) {
  std::map<std::string, const CheckpointTensor*> by_name;
  for (const CheckpointTensor& t : ckpt.tensors) by_name[t.name] = &t;
  at::NoGradGuard no_grad;
  const auto& names = ddp.names();
  const auto& params = ddp.parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    for (const std::string& prefix : {std::string("param/"), std::string("momentum/")}) {
      const auto it = by_name.find(prefix + names[i]);
      if (it == by_name.end()) {
        if (prefix == "param/") throw std::runtime_error("checkpoint lacks " + prefix + names[i]);
        continue;  // saved before the first optimizer step: no momentum yet
      }
      const at::Tensor value = at::tensor(it->second->data).reshape(it->second->shape).to(device);
      if (!value.sizes().equals(params[i].sizes())) {
        throw std::runtime_error("checkpoint's " + it->first + " has another shape");
      }
      if (prefix == "param/") {
        params[i].copy_(value);
      } else {
        auto state = std::make_unique<torch::optim::SGDParamState>();
        state->momentum_buffer(value.clone());
        optimizer.state()[stateKey(optimizer.state(), params[i])] = std::move(state);
      }
    }
  }
}

}  // namespace ncclrec::trainer
