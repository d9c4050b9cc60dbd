// clip_grad_norm_: the global L2 norm of the gradients and the in-place scaling, as device ops.
#include "models/optim/clip.h"

#include <cmath>
#include <limits>

#include "autograd/grad_mode.h"
#include "core/error.h"
#include "ops/elementwise.h"
#include "ops/inplace.h"
#include "ops/reduce.h"

namespace grove::optim {

Tensor clip_grad_norm_(const std::vector<Tensor>& params, double max_norm) {
  GROVE_CHECK(std::isfinite(max_norm) && max_norm > 0,
              "clip_grad_norm_: expected max_norm finite and > 0, but got ", max_norm);
  const autograd::NoGradGuard no_grad;  // the scaling is an update, not part of a model
  std::vector<Tensor> grads;
  DType accumulate = DType::Float32;
  for (std::size_t i = 0; i < params.size(); ++i) {
    GROVE_CHECK(params[i].defined(), "clip_grad_norm_: parameter ", i, " is undefined");
    const Tensor grad = params[i].grad();
    if (!grad.defined()) continue;
    GROVE_CHECK(grads.empty() || grad.device() == grads.front().device(),
                "clip_grad_norm_: expected every gradient on ", grads.front().device(),
                " (the device of the first), but parameter ", i, "'s is on ", grad.device());
    if (grad.dtype() == DType::Float64) accumulate = DType::Float64;
    grads.push_back(grad);
  }
  if (grads.empty()) {
    const Device where = params.empty() ? kCPU : params.front().device();
    return zeros({}, TensorOptions(DType::Float32).device(where));
  }
  // squares: 0-d, the sum of grad^2 of each gradient in turn (sums accumulate in double).
  Tensor squares;
  for (const Tensor& grad : grads) {
    Tensor own = ops::sum(ops::mul(grad, grad));
    if (own.dtype() != accumulate) own = own.to(accumulate);
    squares = squares.defined() ? ops::add(squares, own) : own;
  }
  const Tensor total = ops::sqrt(squares);  // 0-d
  // scale = min(1, max_norm / (total + 1e-6)), 0-d, on the device.
  const Tensor numerator = full({}, max_norm, TensorOptions(accumulate).device(total.device()));
  const Tensor scale = ops::clamp(ops::div(numerator, ops::add(total, 1e-6)),
                                  -std::numeric_limits<double>::infinity(), 1.0);
  for (const Tensor& grad : grads) {
    ops::mul_(grad, scale.dtype() == grad.dtype() ? scale : scale.to(grad.dtype()));
  }
  return total;
}

}  // namespace grove::optim
