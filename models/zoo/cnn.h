// zoo::Cnn: the reference CNN for 28 x 28 images (Fashion-MNIST), as the libtorch harness
// (anchors/libtorch/mnist_bench.cpp's CNN, beside DESIGN.md): c1 Conv 1->32 3x3 pad 1, ReLU,
// MaxPool 2; c2 Conv 32->64 3x3 pad 1, ReLU, MaxPool 2; flatten; fc1 Linear 3136->128, ReLU;
// fc2 Linear 128->10. 421,642 parameters, named c1, c2, fc1, fc2 as in the harness.
//
// Not configurable: the layer sizes are the benchmark's. The loss is computed outside.
// Contract: as nn::Module (built on the CPU with PyTorch's default init, then to(device)).
#pragma once

#include <memory>

#include "models/nn/conv.h"
#include "models/nn/linear.h"
#include "models/nn/module.h"

namespace grove::zoo {

class Cnn : public nn::Module {
 public:
  static constexpr std::int64_t kClasses = 10;
  Cnn();
  // x: (B, 1, 28, 28) float -> logits (B, 10)
  Tensor forward(const Tensor& input) override;

 private:
  std::shared_ptr<nn::Conv2d> c1_, c2_;
  std::shared_ptr<nn::Linear> fc1_, fc2_;
};

}  // namespace grove::zoo
