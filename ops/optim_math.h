// The per-element formulas of the fused optimizer updates (ops/optim.h), shared by the CPU
// kernel (ops/cpu/optim.cpp) and the CUDA kernel (ops/cuda/optim.cu) so that both devices compute
// exactly the same expression, and the host-side loop set-up both kernels use. Plain C++ with
// host/device qualifiers when nvcc compiles it.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/host_device.h"
#include "core/strided_loop.h"
#include "ops/attributes.h"
#include "ops/dispatch.h"

namespace grove::ops {

// SGD's hyperparameters in the parameter's dtype.
template <typename T>
struct SgdCoefficients {
  T lr;
  T momentum;
  T weight_decay;
  bool nesterov;
  bool has_velocity;  // momentum != 0
};

// One element of sgd_ (see ops/optim.h for the math).
template <typename T>
GROVE_HOST_DEVICE inline void sgd_element(T& param, T grad, T* velocity,
                                          const SgdCoefficients<T>& c) {
  const T g = c.weight_decay != T(0) ? T(grad + c.weight_decay * param) : grad;
  T direction = g;
  if (c.has_velocity) {
    const T v = T(c.momentum * *velocity + g);
    *velocity = v;
    direction = c.nesterov ? T(g + c.momentum * v) : v;
  }
  param = T(param - c.lr * direction);
}

// AdamW's hyperparameters, with the bias corrections that depend on the step t.
template <typename T>
struct AdamwCoefficients {
  T lr;
  T beta1;
  T beta2;
  T eps;
  T decay_factor;      // 1 - lr * weight_decay
  T step_size;         // lr / (1 - beta1^t)
  T sqrt_correction2;  // sqrt(1 - beta2^t)
};

// Fills in the step-dependent coefficients for step t (computed in double: beta^t for large t
// would lose digits in float).
// The learning-rate-dependent coefficients, for the attribute's lr at launch or the lr tensor's
// value when the kernel runs (computed in double either way, so both agree).
template <typename T>
GROVE_HOST_DEVICE inline void set_adamw_lr(AdamwCoefficients<T>& c, double lr,
                                           double weight_decay) {
  c.lr = static_cast<T>(lr);
  c.decay_factor = static_cast<T>(1.0 - lr * weight_decay);
}

template <typename T>
GROVE_HOST_DEVICE inline void set_adamw_step(AdamwCoefficients<T>& c, double lr, double beta1,
                                             double beta2, double t) {
  // t < 1 is not a step (the bias corrections would divide by zero or flip sign): poison the
  // update so the parameters turn NaN visibly instead of moving by a wrong amount.
  c.step_size = t >= 1.0 ? static_cast<T>(lr / (1.0 - pow(beta1, t))) : static_cast<T>(NAN);
  c.sqrt_correction2 = static_cast<T>(sqrt(1.0 - pow(beta2, t)));
}

// One element of adamw_ (see ops/optim.h for the math; the order of operations is PyTorch's).
template <typename T>
GROVE_HOST_DEVICE inline void adamw_element(T& param, T grad, T& exp_avg, T& exp_avg_sq,
                                            const AdamwCoefficients<T>& c) {
  param = T(param * c.decay_factor);
  exp_avg = T(c.beta1 * exp_avg + (T(1) - c.beta1) * grad);
  exp_avg_sq = T(c.beta2 * exp_avg_sq + (T(1) - c.beta2) * grad * grad);
  // sqrt in double, rounded to T: correctly rounded on both devices, so they agree exactly.
  const T root = static_cast<T>(sqrt(static_cast<double>(exp_avg_sq)));
  const T denominator = T(root / c.sqrt_correction2 + c.eps);
  param = T(param - c.step_size * exp_avg / denominator);
}

// The value of a one-element tensor of any numeric dtype, as a double (the AdamW step).
// dtype_code is static_cast<int>(DType): 0 float32, 1 float64, 2 int64, 3 int32.
GROVE_HOST_DEVICE inline double read_step(const void* data, int dtype_code) {
  switch (dtype_code) {
    case 0:
      return static_cast<double>(*static_cast<const float*>(data));
    case 1:
      return *static_cast<const double*>(data);
    case 2:
      return static_cast<double>(*static_cast<const std::int64_t*>(data));
    default:
      return static_cast<double>(*static_cast<const std::int32_t*>(data));
  }
}

// Where an update reads its learning rate when the kernel runs: a one-element tensor (sgd_ and
// adamw_ given `lr` as a tensor), or nowhere (data null: the attribute's value, fixed at launch).
struct LrSource {
  const void* data = nullptr;
  int dtype_code = 0;  // as read_step's
};

GROVE_HOST_DEVICE inline double read_lr(const LrSource& source, double fixed) {
  return source.data != nullptr ? read_step(source.data, source.dtype_code) : fixed;
}

// Where an update reads GradScaler's found_inf when the kernel runs: a one-element float32 tensor
// (the call's last input when it skips on found_inf), or nowhere (null: never skipped). See
// Note [Loss scaling on the device] in ops/optim.h.
struct SkipSource {
  const float* found_inf = nullptr;
};

// True if the update must leave every tensor as it is.
GROVE_HOST_DEVICE inline bool skipped(const SkipSource& source) {
  return source.found_inf != nullptr && *source.found_inf != 0.0f;
}

// --- loss scaling (Note [Loss scaling on the device] in ops/optim.h) ---

// False for inf and NaN (x - x is NaN for both, 0 for every finite x).
template <typename T>
GROVE_HOST_DEVICE inline bool is_finite_value(T x) {
  return x - x == T(0);
}

// 1 / scale, computed in double and rounded to float32 once, as PyTorch's GradScaler does.
GROVE_HOST_DEVICE inline float inverse_scale(float scale) {
  return static_cast<float>(1.0 / static_cast<double>(scale));
}

// One gradient element of unscale_grads_: multiplied by the inverse scale; true if it was not
// finite.
template <typename T>
GROVE_HOST_DEVICE inline bool unscale_element(T& grad, float inverse) {
  const bool bad = !is_finite_value(grad);
  grad = static_cast<T>(grad * static_cast<T>(inverse));
  return bad;
}

// update_scale_'s whole update, in float32 as PyTorch's.
GROVE_HOST_DEVICE inline void update_scale_value(float& scale, std::int32_t& growth_tracker,
                                                 float found_inf, double growth_factor,
                                                 double backoff_factor,
                                                 std::int64_t growth_interval) {
  if (found_inf != 0.0f) {
    scale = scale * static_cast<float>(backoff_factor);
    growth_tracker = 0;
    return;
  }
  const std::int64_t grown_steps = static_cast<std::int64_t>(growth_tracker) + 1;
  if (grown_steps < growth_interval) {
    growth_tracker = static_cast<std::int32_t>(grown_steps);
    return;
  }
  const float grown = scale * static_cast<float>(growth_factor);
  if (is_finite_value(grown)) scale = grown;
  growth_tracker = 0;
}

// Host-side helpers of both kernels.

// How many parameters the call updates (1, or the attribute `params`; ops/optim.h).
inline std::size_t optim_params(const OpCall& call) {
  const std::int64_t params = call.kind == OpKind::AdamwStep
                                  ? AdamwAttributes::from(call.attributes).params
                                  : SgdAttributes::from(call.attributes).params;
  return static_cast<std::size_t>(params);
}

// Whether the call skips its update when found_inf (its last input) is not 0.
inline bool optim_skips(const OpCall& call) {
  return call.kind == OpKind::AdamwStep ? AdamwAttributes::from(call.attributes).skip_if_found_inf
                                        : SgdAttributes::from(call.attributes).skip_if_found_inf;
}

// How many tensors each parameter has in the call: itself, its gradient and its states (all
// inputs but AdamW's step, the learning-rate tensor and found_inf, the last inputs when there
// are any).
inline std::size_t optim_tensors(const OpCall& call) {
  if (call.kind == OpKind::AdamwStep) return 4;
  const std::size_t lr = SgdAttributes::from(call.attributes).lr_from_tensor ? 1 : 0;
  const std::size_t found_inf = optim_skips(call) ? 1 : 0;
  return (call.inputs.size() - lr - found_inf) / optim_params(call);
}

// Operand `operand` (0 param, 1 grad, 2... states) of parameter `param`: the inputs are grouped
// by operand (Note [One update over many parameters] in ops/optim.h).
inline const Tensor& optim_operand(const OpCall& call, std::size_t operand, std::size_t param) {
  return call.inputs[operand * optim_params(call) + param];
}

inline LrSource lr_source(const OpCall& call) {
  const bool from_tensor = call.kind == OpKind::AdamwStep
                               ? AdamwAttributes::from(call.attributes).lr_from_tensor
                               : SgdAttributes::from(call.attributes).lr_from_tensor;
  if (!from_tensor) return {};
  const Tensor& lr = call.inputs[call.inputs.size() - (optim_skips(call) ? 2 : 1)];
  return {lr.data_ptr(), static_cast<int>(lr.dtype())};
}

inline SkipSource skip_source(const OpCall& call) {
  if (!optim_skips(call)) return {};
  return {static_cast<const float*>(call.inputs.back().data_ptr())};
}

// The loop runs over the first kOperands inputs; a missing one (SGD without velocity) borrows
// the parameter's strides and is never read.
template <int kOperands>
StridedLoop<kOperands> optim_loop(const OpCall& call) {
  const std::size_t tensors = optim_tensors(call);
  IntArrayRef strides[kOperands];
  for (int k = 0; k < kOperands; ++k) {
    const auto index = static_cast<std::size_t>(k);
    strides[k] = index < tensors ? call.input(index).strides() : call.input(0).strides();
  }
  return make_loop<kOperands>(call.input(0).sizes(), strides, op_name(call.kind).data());
}

// The coefficients of a call's attributes (SgdAttributes and AdamwAttributes, ops/attributes.h;
// sgd_ has a velocity input when momentum is used). AdamW's step-dependent parts are set where
// the step is read (set_adamw_step).
template <typename T>
SgdCoefficients<T> sgd_coefficients(const OpCall& call) {
  const SgdAttributes a = SgdAttributes::from(call.attributes);
  return {static_cast<T>(a.lr), static_cast<T>(a.momentum), static_cast<T>(a.weight_decay),
          a.nesterov, optim_tensors(call) == 3};
}

template <typename T>
AdamwCoefficients<T> adamw_coefficients(const OpCall& call) {
  const AdamwAttributes a = AdamwAttributes::from(call.attributes);
  AdamwCoefficients<T> c{};
  c.lr = static_cast<T>(a.lr);
  c.beta1 = static_cast<T>(a.beta1);
  c.beta2 = static_cast<T>(a.beta2);
  c.eps = static_cast<T>(a.eps);
  set_adamw_lr(c, a.lr, a.weight_decay);
  return c;
}

// Parameter, gradient or state `index`'s data, or null when the call has no such input. For
// calls of one parameter.
template <typename T>
T* optim_data(const OpCall& call, std::size_t index) {
  return index < optim_tensors(call) ? static_cast<T*>(call.input(index).data_ptr()) : nullptr;
}

// AdamW's step tensor: the input after the parameters' tensors.
inline const Tensor& adamw_step_input(const OpCall& call) {
  return call.input(4 * optim_params(call));
}

// Runs `body(one)` for each parameter of a call over several, where `one` is the call of that
// parameter alone (its tensors, then AdamW's step and the lr tensor, with params = 1): the
// kernels' way to take a call whose tensors they cannot update in one pass.
template <typename Body>
void for_each_param(const OpCall& call, Body&& body) {
  const std::size_t params = optim_params(call);
  const std::size_t operands = optim_tensors(call);
  OpAttributes attributes;
  if (call.kind == OpKind::AdamwStep) {
    AdamwAttributes a = AdamwAttributes::from(call.attributes);
    a.params = 1;
    attributes = a.to_attributes();
  } else {
    SgdAttributes a = SgdAttributes::from(call.attributes);
    a.params = 1;
    attributes = a.to_attributes();
  }
  const std::size_t others = call.inputs.size() - params * operands;  // step, lr, found_inf
  std::vector<Tensor> inputs(operands + others);
  for (std::size_t p = 0; p < params; ++p) {
    for (std::size_t k = 0; k < operands; ++k) inputs[k] = optim_operand(call, k, p);
    for (std::size_t o = 0; o < others; ++o) {
      inputs[operands + o] = call.inputs[params * operands + o];
    }
    body(OpCall{call.kind, inputs, attributes});
  }
}

}  // namespace grove::ops
