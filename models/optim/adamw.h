// AdamW: Adam with decoupled weight decay (Loshchilov and Hutter), PyTorch's torch.optim.AdamW
// (amsgrad off), on the fused update ops::adamw_ (ops/optim.h).
//
// Not here: amsgrad, maximize, parameter groups.
//
// Per step, with t = step_tensor() (advanced by step() before the updates, so t >= 1), and per
// parameter (m, v: the moments, made as zeros):
//   param *= 1 - lr * weight_decay
//   m = beta1 * m + (1 - beta1) * grad
//   v = beta2 * v + (1 - beta2) * grad^2
//   param -= (lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// The learning rate and t are read from tensors when the kernel runs (lr is float32, so for
// float64 parameters the rate is the float32 nearest to set_lr()'s argument).
//
// Unlike PyTorch, one step count serves every parameter: a parameter skipped on some steps (no
// grad()) keeps its moments but is bias-corrected with the shared count when it next updates
// (PyTorch counts per parameter). The two agree whenever every parameter has a gradient.
//
// Contract: as Optimizer (optimizer.h). The moments are made in the constructor on the
// parameters' device and named "exp_avg.<index>" and "exp_avg_sq.<index>".
// Not thread-safe: one thread calls an optimizer at a time.
#pragma once

#include <vector>

#include "models/optim/optimizer.h"

namespace grove::optim {

// PyTorch's defaults.
struct AdamwOptions {
  double lr = 1e-3;            // >= 0
  double beta1 = 0.9;          // in [0, 1)
  double beta2 = 0.999;        // in [0, 1)
  double eps = 1e-8;           // > 0
  double weight_decay = 0.01;  // >= 0, decoupled: param *= 1 - lr * weight_decay
};

class AdamW : public Optimizer {
 public:
  // Checks the options (errors name the option and the value) and the parameters (Optimizer).
  explicit AdamW(std::vector<Tensor> params, AdamwOptions options = {});

  // The options given to the constructor; options().lr is the initial rate (lr() is the current
  // one).
  const AdamwOptions& options() const { return options_; }
  // The first and second moments of parameter `index`.
  const Tensor& exp_avg(std::size_t index) const { return exp_avg_.at(index); }
  const Tensor& exp_avg_sq(std::size_t index) const { return exp_avg_sq_.at(index); }

 protected:
  void update(std::span<const std::size_t> indices, std::span<const Tensor> grads,
              const Tensor& found_inf) override;

 private:
  AdamwOptions options_;
  std::vector<Tensor> exp_avg_;     // exp_avg_[i]: like params()[i]
  std::vector<Tensor> exp_avg_sq_;  // exp_avg_sq_[i]: like params()[i]
};

}  // namespace grove::optim
