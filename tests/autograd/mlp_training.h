// The small MLP training run shared by training_test.cpp (CPU) and cuda_training_test.cpp (the
// same run on a GPU, compared with the CPU's): a synthetic separable problem, an 8-32-4 MLP and
// SGD with momentum written as in-place ops. Data and initial parameters are always drawn on the
// CPU, where the generator's numbers are the reference, then copied to the device.
#pragma once

#include <cmath>
#include <vector>

#include "autograd/autograd.h"
#include "ops/elementwise.h"
#include "ops/inplace.h"
#include "ops/linalg.h"
#include "ops/random.h"
#include "ops/reduce.h"
#include "ops/softmax.h"

namespace grove::autograd::testing {

using namespace grove::ops;

// Points in 8 dims; the class is which of 4 fixed directions the point is closest to, so the
// problem is separable by a linear layer and an MLP can fit it quickly.
struct Problem {
  Tensor inputs;   // (N, 8) float32
  Tensor targets;  // (N) int64
};

inline Problem make_problem(std::int64_t count, Generator& generator, Device device) {
  const Tensor inputs = randn({count, 8}, {}, &generator);
  const Tensor directions = randn({8, 4}, {}, &generator);
  return {inputs.to(device), argmax(matmul(inputs, directions), 1).to(device)};
}

struct Mlp {
  Tensor w1, b1, w2, b2;

  Mlp(Generator& generator, Device device) {
    const NoGradGuard no_grad;
    // Uniform(-1/sqrt(in), 1/sqrt(in)), as PyTorch's Linear default; drawn on the CPU.
    auto init = [&](IntArrayRef sizes, double fan_in) {
      const double bound = 1.0 / std::sqrt(fan_in);
      Tensor tensor = empty(sizes);
      uniform_(tensor, -bound, bound, &generator);
      return tensor.to(device).requires_grad_();
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
inline void sgd_step(const std::vector<Tensor>& parameters, std::vector<Tensor>& velocities,
                     double lr, double momentum) {
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

// The loss of every step, then the final accuracy over the whole set.
inline std::vector<float> train(int steps, Device device) {
  Generator generator(1234);
  const Problem problem = make_problem(512, generator, device);
  const Mlp model(generator, device);
  std::vector<Tensor> velocities(4);
  std::vector<float> losses;
  for (int step = 0; step < steps; ++step) {
    const std::int64_t start = (step * 64) % 512;  // batches of 64 in order
    const Tensor x = problem.inputs.slice(0, start, start + 64);
    const Tensor y = problem.targets.slice(0, start, start + 64);
    const Tensor loss = cross_entropy(model.forward(x), y);
    loss.backward();
    sgd_step(model.parameters(), velocities, 0.1, 0.9);
    losses.push_back(loss.item<float>());
  }
  const NoGradGuard no_grad;
  const Tensor predictions = argmax(model.forward(problem.inputs), 1);
  const Tensor correct = sum(eq(predictions, problem.targets).to(DType::Int64));
  losses.push_back(static_cast<float>(correct.item<std::int64_t>()) / 512.0f);
  return losses;
}

}  // namespace grove::autograd::testing
