// nn::Linear: y = x W^T + b (ops::linear), PyTorch's nn.Linear.
//
// Not a fused or quantised layer. Parameters: weight (out_features, in_features) and, unless
// bias = false, bias (out_features); both U(-1/sqrt(in), 1/sqrt(in)) from the CPU default
// generator (PyTorch's kaiming_uniform(a = sqrt 5) for the weight and its bias rule), so
// parameter counts and initial losses match PyTorch's.
// Contract: as nn::Module (built on the CPU, not thread-safe); forward allocates its output.
#pragma once

#include <cstdint>

#include "models/nn/module.h"

namespace grove::nn {

class Linear : public Module {
 public:
  Linear(std::int64_t in_features, std::int64_t out_features, bool bias = true);

  // x: (*, in_features) -> (*, out_features)
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  const Tensor& weight() const { return parameter("weight"); }
  // Undefined when built with bias = false.
  Tensor bias() const { return has_bias_ ? parameter("bias") : Tensor(); }
  std::int64_t in_features() const { return in_features_; }
  std::int64_t out_features() const { return out_features_; }

 private:
  std::int64_t in_features_;
  std::int64_t out_features_;
  bool has_bias_;
};

}  // namespace grove::nn
