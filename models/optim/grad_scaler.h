// GradScaler: loss scaling for float16 training, entirely on the device, so a whole training
// step with it is one graph (Note [Loss scaling on the device] in ops/optim.h):
//
//   optim::GradScaler scaler(device);
//   {
//     const AutocastGuard autocast(DType::Float16);
//     loss = model_loss(...);
//   }
//   scaler.scale(loss).backward();     // gradients S times too large, so small ones survive
//   scaler.unscale_(optimizer);        // optional: before clipping, which needs true gradients
//   optim::clip_grad_norm_(optimizer.params(), 1.0);
//   scaler.step(optimizer);            // unscales (if not yet) and updates, unless overflowed
//   scaler.update();                   // halves S after an overflow, doubles it after a calm run
//
// PyTorch's torch.amp.GradScaler reads the overflow flag on the host in step(); this one never
// reads anything on the host: an overflowed step is skipped by the optimizer's kernels reading
// found_inf(), and scale_value() is the only read (it waits for the device). bfloat16 has
// float32's range and needs no scaler.
//
// State: scale (0-d float32, starting at init_scale), growth tracker (0-d int32) and found_inf
// (0-d float32), all on the device; state() names them for a checkpoint. Not thread-safe.
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "models/optim/optimizer.h"

namespace grove::optim {

struct GradScalerOptions {
  double init_scale = 65536.0;          // 2^16, PyTorch's; > 0 and finite
  double growth_factor = 2.0;           // > 1
  double backoff_factor = 0.5;          // in (0, 1)
  std::int64_t growth_interval = 2000;  // steps without overflow before the scale grows; >= 1
};

class GradScaler {
 public:
  // Checks the options (errors name the option and the value).
  explicit GradScaler(Device device, GradScalerOptions options = {});

  // loss * scale: an op, so the backward runs from the scaled loss.
  Tensor scale(const Tensor& loss) const;
  // Clears found_inf, then divides the gradients of `optimizer`'s parameters (those that have
  // one) by the scale, setting found_inf if any is inf or NaN. Once per step: step() calls it
  // when it has not run since the last update().
  void unscale_(Optimizer& optimizer);
  // unscale_ (if not done this step), then optimizer.step(found_inf()): skipped on the device
  // when a gradient overflowed.
  void step(Optimizer& optimizer);
  // Adjusts the scale from found_inf (update_scale_ in ops/optim.h); ends the step.
  void update();

  const Tensor& scale_tensor() const { return scale_; }
  const Tensor& found_inf() const { return found_inf_; }
  const Tensor& growth_tracker() const { return growth_tracker_; }
  // The current scale (reads the device: waits for it).
  double scale_value() const;
  // {"scale", ...}, {"growth_tracker", ...}: the live tensors, for a checkpoint.
  Optimizer::NamedState state() const;

 private:
  GradScalerOptions options_;
  Tensor scale_;           // 0-d float32
  Tensor growth_tracker_;  // 0-d int32
  Tensor found_inf_;       // 0-d float32
  bool unscaled_ = false;  // unscale_ ran since the last update()
};

}  // namespace grove::optim
