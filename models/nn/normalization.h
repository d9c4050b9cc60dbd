// Normalisations over the trailing normalized_shape dims, PyTorch's modules of the same names:
//   nn::LayerNorm (ops::layer_norm): parameters (when elementwise_affine, the default) weight =
//     ones and bias = zeros, of shape normalized_shape; per-row statistics, biased variance, eps
//     inside the sqrt;
//   nn::RMSNorm (ops::rms_norm): parameter (when elementwise_affine) weight = ones; no centring
//     and no bias; eps unset means the machine epsilon of the input's dtype.
// Not batch norms: no running statistics, no buffers, the same in train and eval mode.
// Contract: as nn::Module (not thread-safe); forward allocates its output.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "models/nn/module.h"

namespace grove::nn {

class LayerNorm : public Module {
 public:
  LayerNorm(std::vector<std::int64_t> normalized_shape, double eps = 1e-5,
            bool elementwise_affine = true);
  explicit LayerNorm(std::int64_t normalized_size, double eps = 1e-5,
                     bool elementwise_affine = true)
      : LayerNorm(std::vector<std::int64_t>{normalized_size}, eps, elementwise_affine) {}

  // x: (*, normalized_shape...) -> the same shape.
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  Tensor weight() const { return affine_ ? parameter("weight") : Tensor(); }
  Tensor bias() const { return affine_ ? parameter("bias") : Tensor(); }

 private:
  std::vector<std::int64_t> normalized_shape_;
  double eps_;
  bool affine_;
};

class RMSNorm : public Module {
 public:
  explicit RMSNorm(std::vector<std::int64_t> normalized_shape,
                   std::optional<double> eps = std::nullopt, bool elementwise_affine = true);
  explicit RMSNorm(std::int64_t normalized_size, std::optional<double> eps = std::nullopt,
                   bool elementwise_affine = true)
      : RMSNorm(std::vector<std::int64_t>{normalized_size}, eps, elementwise_affine) {}

  // x: (*, normalized_shape...) -> the same shape.
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  Tensor weight() const { return affine_ ? parameter("weight") : Tensor(); }

 private:
  std::vector<std::int64_t> normalized_shape_;
  std::optional<double> eps_;
  bool affine_;
};

}  // namespace grove::nn
