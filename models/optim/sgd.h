// SGD: stochastic gradient descent with optional momentum, Nesterov momentum and L2 weight decay,
// PyTorch's torch.optim.SGD with dampening 0, on the fused update ops::sgd_ (ops/optim.h).
//
// Not here: dampening, maximize, parameter groups.
//
// Per step and parameter (g: the gradient, v: the velocity, made as zeros):
//   g = grad + weight_decay * param
//   v = momentum * v + g                                         (when momentum != 0)
//   param -= lr * (nesterov ? g + momentum * v : v)               (g when momentum == 0)
// The learning rate is read from lr_tensor() when the kernel runs (a float32 value, so for
// float64 parameters the rate is the float32 nearest to set_lr()'s argument).
//
// Contract: as Optimizer (optimizer.h). The velocity buffers are made in the constructor on the
// parameters' device (one per parameter, only when momentum != 0) and named "velocity.<index>".
// Not thread-safe: one thread calls an optimizer at a time.
#pragma once

#include <vector>

#include "models/optim/optimizer.h"

namespace grove::optim {

struct SgdOptions {
  double lr = 1e-3;           // >= 0 (PyTorch's default)
  double momentum = 0.0;      // >= 0; 0: plain SGD, no velocity
  double weight_decay = 0.0;  // >= 0: L2 penalty added to the gradient
  bool nesterov = false;      // needs momentum > 0
};

class SGD : public Optimizer {
 public:
  // Checks the options (errors name the option and the value) and the parameters (Optimizer).
  explicit SGD(std::vector<Tensor> params, SgdOptions options = {});

  // The options given to the constructor; options().lr is the initial rate (lr() is the current
  // one).
  const SgdOptions& options() const { return options_; }
  // The momentum buffer of parameter `index`; undefined when momentum is 0.
  const Tensor& velocity(std::size_t index) const { return velocity_.at(index); }

 protected:
  void update(std::span<const std::size_t> indices, std::span<const Tensor> grads,
              const Tensor& found_inf) override;

 private:
  SgdOptions options_;
  std::vector<Tensor> velocity_;  // velocity_[i]: zeros_like(params()[i]), or undefined
};

}  // namespace grove::optim
