// Fused optimizer updates: one kernel per parameter for a whole SGD or AdamW step, instead of the
// three to eight in-place ops (mul_, add_, addcdiv_, ...) the same step takes when written out,
// and one kernel for all parameters given as lists (Note [One update over many parameters]).
// On a GPU each launch costs microseconds of host time and each pass re-reads the parameter, so
// fusing is what keeps an eager step near the launch floor and a captured step near the GPU floor.
//
// Both write into their first argument (the parameter) and into their state tensors, and return
// the parameter. They go through dispatch() as in-place ops: the parameter's version is bumped
// (state tensors are optimizer-internal and never saved for backward, so theirs are not). They
// have no derivative: call them under autograd::NoGradGuard, as optimizers do (with grad mode on,
// writing into a leaf that requires grad is refused).
//
// All tensors (parameter, gradient, states) must have the same sizes, the same floating dtype
// (float32 or float64) and the same device, and no two may overlap in memory. Any strides are
// accepted. Nothing here synchronises the host.
#pragma once

#include <span>

#include "core/tensor.h"

namespace grove::ops {

// The hyperparameters of one fused update, as the kernels take them. Not the optimizers' options
// (optim::SgdOptions, optim::AdamwOptions in models/optim/), which check their values, own the
// state and hand these to the op; the defaults are PyTorch's, as theirs.
struct SgdHyperparameters {
  double lr = 1e-3;           // ignored by the overloads that read lr from a tensor
  double momentum = 0.0;      // 0: plain SGD; the velocity is then neither needed nor written
  double weight_decay = 0.0;  // L2 penalty added to the gradient (PyTorch's SGD weight_decay)
  bool nesterov = false;      // needs momentum > 0
};

// SGD with momentum, PyTorch's formulation (dampening 0):
//   g = grad + weight_decay * param
//   velocity = momentum * velocity + g                    (when momentum != 0)
//   param -= lr * (nesterov ? g + momentum * velocity : velocity)    (g when momentum == 0)
// velocity starts at zeros (zeros_like(param)), which gives PyTorch's first step exactly. With
// momentum 0 the velocity may be undefined.
const Tensor& sgd_(const Tensor& param, const Tensor& grad, const Tensor& velocity,
                   const SgdHyperparameters& options);
// The same with the learning rate read from `lr` (see "Learning rates in tensors" below).
const Tensor& sgd_(const Tensor& param, const Tensor& grad, const Tensor& velocity,
                   const Tensor& lr, const SgdHyperparameters& options);

struct AdamwHyperparameters {
  double lr = 1e-3;  // ignored by the overloads that read lr from a tensor
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.01;  // decoupled: param *= 1 - lr * weight_decay
};

// AdamW (Loshchilov and Hutter), PyTorch's formulation:
//   param *= 1 - lr * weight_decay
//   exp_avg    = beta1 * exp_avg    + (1 - beta1) * grad
//   exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * grad^2
//   param -= (lr / (1 - beta1^t)) * exp_avg / (sqrt(exp_avg_sq) / sqrt(1 - beta2^t) + eps)
// `step` holds t (>= 1, already incremented for this step): a one-element tensor of any
// numeric dtype on the parameter's device, read by the kernel when it runs, so a captured step
// stays correct on every replay as long as the step tensor is advanced in the graph too
// (add_(step, 1) before the updates). A step below 1 makes the parameter NaN (the kernel cannot
// throw). exp_avg and exp_avg_sq start at zeros.
//
const Tensor& adamw_(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                     const Tensor& exp_avg_sq, const Tensor& step,
                     const AdamwHyperparameters& options);
// The same with the learning rate read from `lr` (see below).
const Tensor& adamw_(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                     const Tensor& exp_avg_sq, const Tensor& step, const Tensor& lr,
                     const AdamwHyperparameters& options);

// Note [One update over many parameters]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// sgd_ and adamw_ also take lists: one call updates every parameter of the lists, each from its
// own gradient and into its own states, exactly as one call per parameter would (the same
// per-element formula, ops/optim_math.h, so the results agree bit for bit). An optimizer step
// is then one op instead of one per parameter: on a GPU one kernel for all of them (when every
// tensor is contiguous; otherwise one per parameter), which is what a step of a model with
// dozens of small parameters spends its launches and its graph nodes on.
//   - The op's inputs are grouped by kind: the n parameters, then the n gradients, then the n
//     tensors of each state (velocity; exp_avg, then exp_avg_sq), then AdamW's step, then lr.
//     The attribute `params` holds n (ops/attributes.h); n = 1 is the call of one parameter.
//   - Each parameter's tensors follow the rules above; all parameters share one dtype; no two
//     of all the tensors overlap (errors name the tensor and its parameter: "grad 3").
//   - The op writes inputs [0, n) in place (ops::in_place_writes): dispatch checks and bumps
//     each parameter as it does input 0, and a trace records every parameter as written. It
//     returns params[0]. With grad mode on and a tensor that requires gradients it is refused
//     (it has no derivative; optimizers call it inside a NoGradGuard).
//   - sgd_ takes velocities exactly when momentum != 0 (empty otherwise); an undefined `lr`
//     means options.lr, fixed when the call is made or traced.
//   - `found_inf` (optional): GradScaler's flag, one float32 element read when the kernel runs;
//     when it is not 0 the call writes nothing (Note [Loss scaling on the device] below).
void sgd_(std::span<const Tensor> params, std::span<const Tensor> grads,
          std::span<const Tensor> velocities, const Tensor& lr, const SgdHyperparameters& options,
          const Tensor& found_inf = Tensor());
void adamw_(std::span<const Tensor> params, std::span<const Tensor> grads,
            std::span<const Tensor> exp_avgs, std::span<const Tensor> exp_avg_sqs,
            const Tensor& step, const Tensor& lr, const AdamwHyperparameters& options,
            const Tensor& found_inf = Tensor());

// Note [Loss scaling on the device]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// float16 holds magnitudes from 6e-5 (smaller ones lose digits, below 6e-8 they are zero) to
// 65504, and the gradients of a float16 forward often fall below that range. Loss scaling
// multiplies the loss by a large factor S before the backward, so every gradient is S times
// larger, divides them by S before the update, and when some scaled gradient overflowed (inf or
// NaN) skips that step's update and halves S; after `growth_interval` steps without overflow it
// doubles S. PyTorch's GradScaler reads the overflow flag on the host each step to decide whether
// to call the optimizer: a synchronisation, and a branch no captured graph can hold. grove keeps
// the decision on the device, in three ops that read their flags when their kernels run:
//   unscale_grads_  gradients *= 1/S (1/S rounded to float32 once, as PyTorch), found_inf = 1
//                   when any of them holds an inf or a NaN (it is never reset here: zero it first);
//   sgd_, adamw_    given found_inf, they leave every tensor untouched when it is not 0;
//   update_scale_   S *= backoff_factor and growth_tracker = 0 when found_inf is not 0; else
//                   growth_tracker += 1, and when it reaches growth_interval, S *= growth_factor
//                   (if the product is finite) and growth_tracker = 0.
// A whole training step with loss scaling is then one graph that replays correctly whatever the
// overflow pattern (models/optim/grad_scaler.h puts them together).
//
// The gradients (each any floating dtype, any strides, none overlapping another or the flags)
// are written in place and their versions bumped; found_inf (one float32 element) is written
// too, like an optimizer's state. scale (one float32 element) is read when the kernel runs.
void unscale_grads_(std::span<const Tensor> grads, const Tensor& found_inf, const Tensor& scale);
// scale: one float32 element > 0; growth_tracker: one int32 element; found_inf as above. Writes
// scale (returned) and growth_tracker. growth_factor > 1 (finite), 0 < backoff_factor < 1,
// growth_interval >= 1.
const Tensor& update_scale_(const Tensor& scale, const Tensor& growth_tracker,
                            const Tensor& found_inf, double growth_factor, double backoff_factor,
                            std::int64_t growth_interval);

// Learning rates in tensors. Captured graphs (and compiled steps) keep the hyperparameters of
// options as kernel arguments, fixed when the update is captured or traced: with them, a
// learning-rate schedule would need a new capture whenever lr changes. The overloads above that
// take `lr` as a tensor (one float32 or float64 element on the parameter's device, memory of
// its own) read it when the kernel runs, like AdamW's step, and ignore options.lr: a schedule
// writes the new rate into that tensor (lr.fill_(rate)) between steps, and replays follow.
// AdamW's lr-dependent terms (1 - lr * weight_decay, lr / (1 - beta1^t)) are computed in double
// from the tensor's value, as from options.lr, so the two forms agree exactly for a float64 lr.

}  // namespace grove::ops
