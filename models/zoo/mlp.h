// zoo::Mlp: the reference MLP for 28 x 28 images (Fashion-MNIST): flatten -> Linear 784->256,
// ReLU, Linear 256->256, ReLU, Linear 256->10 -> logits. Parameter names fc1, fc2, fc3 as in the
// libtorch harness (anchors/libtorch/mnist_bench.cpp's MLP, beside DESIGN.md), 269,322 parameters.
//
// Not a general MLP builder (compose nn::Linear in an nn::Sequential for that). The loss is
// computed outside: ops::cross_entropy(model.forward(x), labels).
// Contract: as nn::Module (built on the CPU with PyTorch's default init, then to(device)).
#pragma once

#include <memory>

#include "models/nn/linear.h"
#include "models/nn/module.h"

namespace grove::zoo {

class Mlp : public nn::Module {
 public:
  static constexpr std::int64_t kInputs = 28 * 28, kHidden = 256, kClasses = 10;
  Mlp();
  // x: (B, 1, 28, 28) or (B, 784) float -> logits (B, 10)
  Tensor forward(const Tensor& input) override;

 private:
  std::shared_ptr<nn::Linear> fc1_, fc2_, fc3_;
};

}  // namespace grove::zoo
