// End to end: a small MLP learns a synthetic, separable problem with SGD written as in-place
// ops, and a numerically identical run reproduces the losses exactly.
#include <gtest/gtest.h>

#include <cstdio>

#include "tests/autograd/mlp_training.h"

namespace grove::autograd {
namespace {

// The run of tests/autograd/mlp_training.h on the CPU.
std::vector<float> train(int steps) {
  return testing::train(steps, kCPU);
}

TEST(Training, MlpLearnsASeparableProblem) {
  const std::vector<float> result = train(100);
  const float first_loss = result.front();
  const float last_loss = result[result.size() - 2];
  const float accuracy = result.back();
  // Chance level for 4 classes is ln 4 = 1.39; a working backward gets far below it.
  std::printf("first loss %.4f, last loss %.4f, accuracy %.3f\n", first_loss, last_loss, accuracy);
  EXPECT_GT(first_loss, 1.0f);
  EXPECT_LT(last_loss, 0.3f) << "first loss " << first_loss;
  EXPECT_GT(accuracy, 0.9f);
}

TEST(Training, RunsAreBitIdentical) {
  // Same seed, same thread count: every loss must repeat exactly (no hidden nondeterminism in
  // the engine's order of accumulation).
  EXPECT_EQ(train(20), train(20));
}

}  // namespace
}  // namespace grove::autograd
