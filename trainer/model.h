// The model and the data of the reference trainer: an MLP student learning a fixed random
// teacher network on synthetic inputs. Deterministic from the seed alone, so every rank builds the
// same dataset without reading files, and the loss has a known floor (the label noise).
// Header-only on purpose: it is compiled once, in train.cc (each LibTorch translation unit costs
// ~20 s and ~1 GB to build).
#pragma once

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>

#include <cmath>
#include <cstdint>
#include <string>

namespace ncclrec::trainer {

inline constexpr int64_t kInputs = 32;
inline constexpr int64_t kOutputs = 8;
inline constexpr int64_t kTeacherHidden = 32;
inline constexpr double kLabelNoise = 0.05;

// in -> [Linear(hidden) -> ReLU] x depth -> Linear(out). Parameters are named net.<i>.weight/bias.
struct MlpImpl : torch::nn::Module {
  MlpImpl(int64_t hidden, int64_t depth) {
    torch::nn::Sequential layers;
    int64_t width = kInputs;
    for (int64_t i = 0; i < depth; ++i) {
      layers->push_back(torch::nn::Linear(width, hidden));
      layers->push_back(torch::nn::ReLU());
      width = hidden;
    }
    layers->push_back(torch::nn::Linear(width, kOutputs));
    net = register_module("net", layers);
  }
  torch::Tensor forward(const torch::Tensor& x) { return net->forward(x); }
  torch::nn::Sequential net{nullptr};
};
TORCH_MODULE(Mlp);

struct Dataset {
  torch::Tensor x;  // [n, kInputs]
  torch::Tensor y;  // [n, kOutputs]
};

// `n` samples labelled by the teacher of `seed` (the same teacher for every `stream`); `stream`
// keeps the training and evaluation inputs apart.
inline Dataset makeTeacherDataset(int64_t n, uint64_t seed, uint64_t stream) {
  at::Generator teacher_rng = at::detail::createCPUGenerator(seed);
  const torch::Tensor w1 =
      at::randn({kInputs, kTeacherHidden}, teacher_rng) / std::sqrt(double(kInputs));
  const torch::Tensor b1 = at::randn({kTeacherHidden}, teacher_rng) * 0.5;
  const torch::Tensor w2 =
      at::randn({kTeacherHidden, kOutputs}, teacher_rng) / std::sqrt(double(kTeacherHidden));
  at::Generator data_rng = at::detail::createCPUGenerator(seed * 1000003 + stream + 1);
  Dataset d;
  d.x = at::randn({n, kInputs}, data_rng);
  d.y = at::matmul(at::tanh(at::matmul(d.x, w1) + b1), w2) +
        at::randn({n, kOutputs}, data_rng) * kLabelNoise;
  return d;
}

// Identifies the model's architecture in checkpoints.
inline std::string modelSignature(int64_t hidden, int64_t depth) {
  return "mlp in=" + std::to_string(kInputs) + " hidden=" + std::to_string(hidden) +
         " depth=" + std::to_string(depth) + " out=" + std::to_string(kOutputs);
}

}  // namespace ncclrec::trainer
