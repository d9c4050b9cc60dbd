// zoo::ResNet, the small residual CNN: its parameter count and names, the shapes through it, the
// skip being the identity (a block whose second convolution is zero passes relu(x) through),
// and its input check. Its training steps, GPU parity and runs are the registry-wide tests'
// (zoo_test, cuda_zoo_test, models/train).
#include <gtest/gtest.h>

#include "autograd/autograd.h"
#include "core/error.h"
#include "models/zoo/resnet.h"
#include "ops/elementwise.h"
#include "ops/random.h"

namespace grove::zoo {
namespace {

TEST(ResNet, ParameterCountAndNames) {
  ResNet model;
  // stem 16*1*3*3 + 16 = 160; each block two convolutions of 16*16*3*3 + 16 = 2320;
  // fc 16*10 + 10 = 170.
  static_assert(160 + 2 * (2 * 2320) + 170 == 9610);
  EXPECT_EQ(model.parameter_count(), 9610);
  std::vector<std::string> names;
  for (const auto& entry : model.named_parameters()) names.push_back(entry.first);
  EXPECT_EQ(names, (std::vector<std::string>{"stem.weight", "stem.bias", "block1.conv1.weight",
                                             "block1.conv1.bias", "block1.conv2.weight",
                                             "block1.conv2.bias", "block2.conv1.weight",
                                             "block2.conv1.bias", "block2.conv2.weight",
                                             "block2.conv2.bias", "fc.weight", "fc.bias"}));
}

TEST(ResNet, ForwardShapes) {
  manual_seed(61);
  ResNet model;
  for (const std::int64_t batch : {1, 5}) {
    EXPECT_EQ(model(ops::randn({batch, 1, 28, 28})).sizes(), IntArrayRef({batch, 10}));
  }
  ResidualBlock block(3);
  EXPECT_EQ(block(ops::randn({2, 3, 7, 9})).sizes(), IntArrayRef({2, 3, 7, 9}));
  EXPECT_THROW(model(ops::randn({2, 3, 28, 28})), Error);  // three channels
  EXPECT_THROW(model(ops::randn({2, 1, 32, 32})), Error);  // another size
  EXPECT_THROW(model(ops::randn({1, 28, 28})), Error);     // no batch dimension
}

TEST(ResNet, TheSkipIsTheIdentity) {
  manual_seed(62);
  ResidualBlock block(4);
  {
    const autograd::NoGradGuard no_grad;
    for (const auto& [name, parameter] : block.named_parameters()) {
      if (name.starts_with("conv2.")) parameter.zero_();
    }
  }
  // conv2 gives 0, so the block is relu(x + 0).
  const Tensor x = ops::randn({2, 4, 5, 5});
  EXPECT_EQ(block(x).to_vector<float>(), ops::relu(x).to_vector<float>());
}

}  // namespace
}  // namespace grove::zoo
