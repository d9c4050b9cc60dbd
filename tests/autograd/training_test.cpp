// End to end: a small MLP learns a synthetic, separable problem with SGD written as in-place
// ops, and a numerically identical run reproduces the losses exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "autograd/autograd.h"
#include "ops/elementwise.h"
#include "ops/inplace.h"
#include "ops/linalg.h"
#include "ops/random.h"
#include "ops/reduce.h"
#include "ops/softmax.h"

namespace grove::autograd {
namespace {

using namespace grove::ops;

// Points in 8 dims; the class is which of 4 fixed directions the point is closest to, so the
// problem is separable by a linear layer and an MLP can fit it quickly.
struct Problem {
  Tensor inputs;   // (N, 8) float32
  Tensor targets;  // (N) int64
};

Problem make_problem(std::int64_t count, Generator& generator) {
  const Tensor inputs = randn({count, 8}, {}, &generator);
  const Tensor directions = randn({8, 4}, {}, &generator);
  return {inputs, argmax(matmul(inputs, directions), 1)};
}

struct Mlp {
  Tensor w1, b1, w2, b2;

  explicit Mlp(Generator& generator) {
    const NoGradGuard no_grad;
    // Uniform(-1/sqrt(in), 1/sqrt(in)), as PyTorch's Linear default.
    auto init = [&](IntArrayRef sizes, double fan_in) {
      const double bound = 1.0 / std::sqrt(fan_in);
      Tensor tensor = empty(sizes);
      uniform_(tensor, -bound, bound, &generator);
      return tensor.requires_grad_();
    };
    w1 = init({32, 8}, 8);
    b1 = init({32}, 8);
    w2 = init({4, 32}, 32);
    b2 = init({4}, 32);
  }

  std::vector<Tensor> parameters() const { return {w1, b1, w2, b2}; }
  Tensor forward(const Tensor& x) const { return linear(relu(linear(x, w1, b1)), w2, b2); }
};

// SGD with momentum, as in-place ops: v = momentum v + g; p -= lr v.
void sgd_step(const std::vector<Tensor>& parameters, std::vector<Tensor>& velocities, double lr,
              double momentum) {
  const NoGradGuard no_grad;
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    const Tensor& grad = parameters[i].grad();
    if (!velocities[i].defined()) velocities[i] = zeros_like(grad);
    mul_(velocities[i], momentum);
    add_(velocities[i], grad);
    add_(parameters[i], velocities[i], -lr);
    parameters[i].set_grad(Tensor());
  }
}

std::vector<float> train(int steps) {
  Generator generator(1234);
  const Problem problem = make_problem(512, generator);
  const Mlp model(generator);
  std::vector<Tensor> velocities(4);
  std::vector<float> losses;
  for (int step = 0; step < steps; ++step) {
    // Batches of 64 in order.
    const std::int64_t start = (step * 64) % 512;
    const Tensor x = problem.inputs.slice(0, start, start + 64);
    const Tensor y = problem.targets.slice(0, start, start + 64);
    const Tensor loss = cross_entropy(model.forward(x), y);
    loss.backward();
    sgd_step(model.parameters(), velocities, 0.1, 0.9);
    losses.push_back(loss.item<float>());
  }
  // Final accuracy over the whole set, without recording.
  const NoGradGuard no_grad;
  const Tensor predictions = argmax(model.forward(problem.inputs), 1);
  const Tensor correct = sum(eq(predictions, problem.targets).to(DType::Int64));
  losses.push_back(static_cast<float>(correct.item<std::int64_t>()) / 512.0f);
  return losses;
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
