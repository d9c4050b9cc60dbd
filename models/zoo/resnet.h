// zoo::ResNet: a small residual CNN for 28 x 28 images (Fashion-MNIST), the first model added
// through the registry (models/zoo/registry.h):
//   stem    Conv 1->16 3x3 pad 1, ReLU                 (B, 16, 28, 28)
//           MaxPool 2                                  (B, 16, 14, 14)
//   block1  ResidualBlock(16)                          (B, 16, 14, 14)
//   block2  ResidualBlock(16)                          (B, 16, 14, 14)
//           global average pool (AvgPool 14)           (B, 16)
//   fc      Linear 16->10                              (B, 10)
// A ResidualBlock is relu(x + conv2(relu(conv1(x)))), both convolutions 3x3 pad 1 with as many
// channels out as in, so the skip is the identity. 9,610 parameters, named stem, block1.conv1,
// block1.conv2, block2.conv1, block2.conv2, fc.
//
// Not a ResNet-18 (no batch normalisation, no strided blocks, no projection skips) and not
// configurable; the loss is computed outside. Downsampling before the blocks keeps a CPU step
// cheap (the blocks run on 14 x 14 maps).
// Contract: as nn::Module (built on the CPU with PyTorch's default init, then to(device)).
#pragma once

#include <cstdint>
#include <memory>

#include "models/nn/conv.h"
#include "models/nn/linear.h"
#include "models/nn/module.h"

namespace grove::zoo {

// relu(x + conv2(relu(conv1(x)))); shapes are kept: (B, C, H, W) -> (B, C, H, W).
class ResidualBlock : public nn::Module {
 public:
  explicit ResidualBlock(std::int64_t channels);
  Tensor forward(const Tensor& input) override;

 private:
  std::shared_ptr<nn::Conv2d> conv1_, conv2_;
};

class ResNet : public nn::Module {
 public:
  static constexpr std::int64_t kChannels = 16, kClasses = 10;
  ResNet();
  // x: (B, 1, 28, 28) float -> logits (B, 10)
  Tensor forward(const Tensor& input) override;

 private:
  std::shared_ptr<nn::Conv2d> stem_;
  std::shared_ptr<ResidualBlock> block1_, block2_;
  std::shared_ptr<nn::Linear> fc_;
};

}  // namespace grove::zoo
