// See models/optim/grad_scaler.h and Note [Loss scaling on the device] in ops/optim.h.
#include "models/optim/grad_scaler.h"

#include <climits>
#include <cmath>
#include <vector>

#include "autograd/grad_mode.h"
#include "core/error.h"
#include "ops/elementwise.h"
#include "ops/inplace.h"
#include "ops/optim.h"

namespace grove::optim {

GradScaler::GradScaler(Device device, GradScalerOptions options) : options_(options) {
  GROVE_CHECK(std::isfinite(options.init_scale) && options.init_scale > 0,
              "GradScaler: expected init_scale > 0 and finite, got ", options.init_scale);
  GROVE_CHECK(std::isfinite(options.growth_factor) && options.growth_factor > 1,
              "GradScaler: expected growth_factor > 1 and finite, got ", options.growth_factor);
  GROVE_CHECK(options.backoff_factor > 0 && options.backoff_factor < 1,
              "GradScaler: expected backoff_factor in (0, 1), got ", options.backoff_factor);
  GROVE_CHECK(options.growth_interval >= 1 && options.growth_interval <= INT32_MAX,
              "GradScaler: expected growth_interval of 1 to ", INT32_MAX, " steps, got ",
              options.growth_interval);
  scale_ = full({}, options.init_scale, TensorOptions(DType::Float32).device(device));
  growth_tracker_ = zeros({}, TensorOptions(DType::Int32).device(device));
  found_inf_ = zeros({}, TensorOptions(DType::Float32).device(device));
}

Tensor GradScaler::scale(const Tensor& loss) const {
  GROVE_CHECK(loss.defined() && loss.device() == scale_.device(), "GradScaler::scale: expected a ",
              "loss on ", scale_.device(), " (the scaler's device), but got ",
              loss.defined() ? loss.device().to_string() : std::string("an undefined tensor"));
  // The scale in the loss's dtype: a float32 loss (autocast's) is multiplied exactly.
  return ops::mul(loss, loss.dtype() == DType::Float32 ? scale_ : scale_.to(loss.dtype()));
}

void GradScaler::unscale_(Optimizer& optimizer) {
  GROVE_CHECK(!unscaled_,
              "GradScaler::unscale_: already called since the last update(); the "
              "gradients would be divided twice. Call it once per step, before step()");
  const autograd::NoGradGuard no_grad;
  ops::zero_(found_inf_);
  std::vector<Tensor> grads;
  for (const Tensor& param : optimizer.params()) {
    if (Tensor grad = param.grad(); grad.defined()) grads.push_back(std::move(grad));
  }
  if (!grads.empty()) ops::unscale_grads_(grads, found_inf_, scale_);
  unscaled_ = true;
}

void GradScaler::step(Optimizer& optimizer) {
  if (!unscaled_) unscale_(optimizer);
  optimizer.step(found_inf_);
}

void GradScaler::update() {
  const autograd::NoGradGuard no_grad;
  ops::update_scale_(scale_, growth_tracker_, found_inf_, options_.growth_factor,
                     options_.backoff_factor, options_.growth_interval);
  unscaled_ = false;
}

double GradScaler::scale_value() const {
  return scale_.item<double>();
}

Optimizer::NamedState GradScaler::state() const {
  return {{"scale", scale_}, {"growth_tracker", growth_tracker_}};
}

}  // namespace grove::optim
