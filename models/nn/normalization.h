// nn::LayerNorm: layer normalisation over the trailing normalized_shape dims (ops::layer_norm),
// PyTorch's nn.LayerNorm.
//
// Parameters (when elementwise_affine, the default): weight (normalized_shape) = ones and bias
// (normalized_shape) = zeros. Statistics are per row, biased variance, eps inside the sqrt.
// Not a batch norm: no running statistics, no buffers, the same in train and eval mode.
// Contract: as nn::Module (not thread-safe); forward allocates its output.
#pragma once

#include <cstdint>
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

}  // namespace grove::nn
