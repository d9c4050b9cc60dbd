// nn::Conv2d: 2-d convolution (cross-correlation, ops::conv2d) with square kernels, stride and
// zero padding, PyTorch's nn.Conv2d without groups or dilation.
//
// Parameters: weight (out_channels, in_channels, k, k) and, unless bias = false, bias
// (out_channels); fan_in = in_channels * k * k and the same bounds as Linear
// (U(-1/sqrt(fan_in), 1/sqrt(fan_in))), drawn from the CPU default generator.
// Contract: as nn::Module (built on the CPU, not thread-safe); forward allocates its output.
#pragma once

#include <cstdint>

#include "models/nn/module.h"

namespace grove::nn {

class Conv2d : public Module {
 public:
  Conv2d(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel_size,
         std::int64_t stride = 1, std::int64_t padding = 0, bool bias = true);

  // x: (N, C_in, H, W) -> (N, C_out, Ho, Wo), Ho = (H + 2 padding - k) / stride + 1.
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  const Tensor& weight() const { return parameter("weight"); }
  Tensor bias() const { return has_bias_ ? parameter("bias") : Tensor(); }

 private:
  std::int64_t in_channels_;
  std::int64_t out_channels_;
  std::int64_t kernel_size_;
  std::int64_t stride_;
  std::int64_t padding_;
  bool has_bias_;
};

}  // namespace grove::nn
