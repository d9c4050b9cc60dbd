// zoo::ResNet and its ResidualBlock; see resnet.h.
#include "models/zoo/resnet.h"

#include "core/error.h"
#include "ops/elementwise.h"
#include "ops/pool.h"

namespace grove::zoo {

ResidualBlock::ResidualBlock(std::int64_t channels) : nn::Module("ResidualBlock") {
  conv1_ = register_module(
      "conv1", std::make_shared<nn::Conv2d>(channels, channels, 3, /*stride=*/1, /*padding=*/1));
  conv2_ = register_module(
      "conv2", std::make_shared<nn::Conv2d>(channels, channels, 3, /*stride=*/1, /*padding=*/1));
}

Tensor ResidualBlock::forward(const Tensor& input) {
  const Tensor residual = conv2_->forward(ops::relu(conv1_->forward(input)));  // (B, C, H, W)
  return ops::relu(ops::add(input, residual));
}

ResNet::ResNet() : nn::Module("ResNet") {
  stem_ = register_module(
      "stem", std::make_shared<nn::Conv2d>(1, kChannels, 3, /*stride=*/1, /*padding=*/1));
  block1_ = register_module("block1", std::make_shared<ResidualBlock>(kChannels));
  block2_ = register_module("block2", std::make_shared<ResidualBlock>(kChannels));
  fc_ = register_module("fc", std::make_shared<nn::Linear>(kChannels, kClasses));
}

Tensor ResNet::forward(const Tensor& input) {
  GROVE_CHECK(input.dim() == 4 && input.size(1) == 1 && input.size(2) == 28 && input.size(3) == 28,
              "ResNet: expected images of shape (B, 1, 28, 28), got ", input.sizes());
  Tensor x = ops::max_pool2d(ops::relu(stem_->forward(input)), {2, 2});  // (B, 16, 14, 14)
  x = block1_->forward(x);                                               // (B, 16, 14, 14)
  x = block2_->forward(x);                                               // (B, 16, 14, 14)
  x = ops::avg_pool2d(x, {14, 14});                                      // (B, 16, 1, 1)
  x = x.reshape({x.size(0), kChannels});                                 // (B, 16)
  return fc_->forward(x);                                                // (B, 10)
}

}  // namespace grove::zoo
