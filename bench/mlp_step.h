// The eager MLP training step the benchmarks time on each device (autograd_bench on the CPU,
// cuda_mlp_bench on a GPU): 784-256-256-10 with ReLU, batch 128, cross entropy, backward, SGD
// with momentum 0.9 as in-place ops (or one fused sgd_ per parameter). Data and initial values
// are drawn on the CPU and copied to the device.
#pragma once

#include <cmath>
#include <vector>

#include "autograd/autograd.h"
#include "ops/elementwise.h"
#include "ops/inplace.h"
#include "ops/linalg.h"
#include "ops/optim.h"
#include "ops/random.h"
#include "ops/softmax.h"

namespace grove::bench {

struct MlpStep {
  Device device;
  bool fused_sgd;  // one sgd_ per parameter instead of mul_, add_, add_
  std::vector<Tensor> parameters;
  std::vector<Tensor> velocities;
  Tensor inputs;
  Tensor targets;

  explicit MlpStep(Device on = kCPU, bool fused = false)
      : device(on),
        fused_sgd(fused),
        inputs(ops::randn({128, 784}).to(on)),
        targets(ops::randint(0, 10, {128}).to(on)) {
    const std::int64_t sizes[][2] = {{256, 784}, {256, 256}, {10, 256}};
    const autograd::NoGradGuard no_grad;
    for (const auto& size : sizes) {
      const double bound = 1.0 / std::sqrt(static_cast<double>(size[1]));
      Tensor weight = empty({size[0], size[1]});
      Tensor bias = empty({size[0]});
      ops::uniform_(weight, -bound, bound);
      ops::uniform_(bias, -bound, bound);
      parameters.push_back(weight.to(device).requires_grad_());
      parameters.push_back(bias.to(device).requires_grad_());
    }
    for (const Tensor& parameter : parameters) velocities.push_back(zeros_like(parameter));
  }

  void run() {
    forward().backward();
    update();
  }

  // zero_grad, then the forward pass to the loss.
  Tensor forward() {
    using namespace grove::ops;
    for (const Tensor& parameter : parameters) parameter.set_grad(Tensor());  // zero_grad
    Tensor h = relu(linear(inputs, parameters[0], parameters[1]));
    h = relu(linear(h, parameters[2], parameters[3]));
    return cross_entropy(linear(h, parameters[4], parameters[5]), targets);
  }

  // SGD with momentum 0.9, learning rate 0.01.
  void update() {
    using namespace grove::ops;
    const autograd::NoGradGuard no_grad;
    for (std::size_t i = 0; i < parameters.size(); ++i) {
      if (fused_sgd) {
        sgd_(parameters[i], parameters[i].grad(), velocities[i], {0.01, 0.9});
        continue;
      }
      mul_(velocities[i], 0.9);
      add_(velocities[i], parameters[i].grad());
      add_(parameters[i], velocities[i], -0.01);
    }
  }
};

}  // namespace grove::bench
