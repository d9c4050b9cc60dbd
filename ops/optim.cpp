// Fused optimizer updates: argument checks and the user functions. Kernels are in
// ops/cpu/optim.cpp and ops/cuda/optim.cu; the per-element math is shared (ops/optim_math.h).
#include "ops/optim.h"

#include <cmath>

#include "ops/attributes.h"
#include "ops/cpu/optim.h"
#include "ops/cuda/kernel_entry.h"
#include "ops/cuda/optim.h"
#include "ops/dispatch.h"
#include "ops/op_table.h"

namespace grove::ops {
namespace {

// The highest byte any element of `t` touches, plus one (strides are never negative).
const char* end_of(const Tensor& t) {
  std::int64_t last = 0;
  for (std::int64_t d = 0; d < t.dim(); ++d) last += (t.sizes()[d] - 1) * t.strides()[d];
  return static_cast<const char*>(t.data_ptr()) +
         (last + 1) * static_cast<std::int64_t>(element_size(t.dtype()));
}

bool overlap(const Tensor& a, const Tensor& b) {
  if (!a.is_alias_of(b) || a.numel() == 0 || b.numel() == 0) return false;
  const char* a_begin = static_cast<const char*>(a.data_ptr());
  const char* b_begin = static_cast<const char*>(b.data_ptr());
  return a_begin < end_of(b) && b_begin < end_of(a);
}

// Inputs [0, tensors) are parameter, gradient and states: one floating dtype, one shape, no
// overlap. `names` names them for the messages.
void check_tensors(const OpCall& call, std::size_t tensors, const char* const* names) {
  const Tensor& param = call.input(0);
  GROVE_OP_CHECK(call, param.dtype() == DType::Float32 || param.dtype() == DType::Float64,
                 "expected a float32 or float64 parameter, but got ", param.dtype());
  for (std::size_t i = 1; i < tensors; ++i) {
    const Tensor& t = call.input(i);
    GROVE_OP_CHECK(call, t.dtype() == param.dtype(), "expected ", names[i],
                   " to have the parameter's dtype ", param.dtype(), ", but got ", t.dtype());
    GROVE_OP_CHECK(call, t.sizes() == param.sizes(), "expected ", names[i],
                   " to have the parameter's sizes ", param.sizes(), ", but got ", t.sizes());
  }
  // The states (inputs 2 and up) are written like the parameter, whose layout dispatch checks.
  for (std::size_t i = 2; i < tensors; ++i) {
    const Tensor& t = call.input(i);
    GROVE_OP_CHECK(call, !has_internal_overlap(t.sizes(), t.strides()), names[i],
                   " has elements that share memory (an expanded view, strides ", t.strides(),
                   "); each element needs its own: clone() it");
  }
  for (std::size_t i = 0; i < tensors; ++i) {
    for (std::size_t j = i + 1; j < tensors; ++j) {
      GROVE_OP_CHECK(call, !overlap(call.input(i), call.input(j)), names[i], " and ", names[j],
                     " share memory; each needs its own (clone() one of them)");
    }
  }
}

void check_hyperparameter(const OpCall& call, const char* name, double value, bool ok,
                          const char* expected) {
  GROVE_OP_CHECK(call, std::isfinite(value) && ok, "expected ", name, " ", expected, ", but got ",
                 value);
}

// The learning-rate tensor (the call's last input): one floating element, its own memory.
void check_lr_tensor(const OpCall& call, std::size_t tensors) {
  const Tensor& lr = call.inputs.back();
  GROVE_OP_CHECK(call,
                 lr.numel() == 1 && (lr.dtype() == DType::Float32 || lr.dtype() == DType::Float64),
                 "expected lr to be a one-element float32 or float64 tensor holding the learning "
                 "rate, but got ",
                 lr.dtype(), lr.sizes());
  for (std::size_t i = 0; i < tensors; ++i) {
    GROVE_OP_CHECK(call, !overlap(call.input(i), lr), "input ", i,
                   " shares memory with lr; the learning rate needs its own tensor");
  }
}

// Inputs (param, grad[, velocity][, lr]). Attributes: SgdAttributes (ops/attributes.h).
void infer_sgd(const OpCall& call, OutputSpecs& outputs) {
  static const char* const kNames[] = {"param", "grad", "velocity"};
  const auto [lr, momentum, weight_decay, nesterov, lr_from_tensor] =
      SgdAttributes::from(call.attributes);
  const std::size_t tensors = call.inputs.size() - (lr_from_tensor ? 1 : 0);
  if (lr_from_tensor) {
    check_lr_tensor(call, tensors);
  } else {
    check_hyperparameter(call, "lr", lr, lr >= 0, ">= 0");
  }
  check_hyperparameter(call, "momentum", momentum, momentum >= 0, ">= 0");
  check_hyperparameter(call, "weight_decay", weight_decay, weight_decay >= 0, ">= 0");
  GROVE_OP_CHECK(call, !nesterov || momentum > 0, "nesterov needs momentum > 0, but momentum is ",
                 momentum);
  GROVE_OP_CHECK(call, momentum == 0 || tensors == 3, "momentum ", momentum,
                 " needs a velocity tensor (zeros_like(param) at first)");
  check_tensors(call, tensors, kNames);
  outputs.in_place = true;
}

// Inputs (param, grad, exp_avg, exp_avg_sq, step[, lr]). Attributes: AdamwAttributes.
void infer_adamw(const OpCall& call, OutputSpecs& outputs) {
  static const char* const kNames[] = {"param", "grad", "exp_avg", "exp_avg_sq"};
  const auto [lr, beta1, beta2, eps, weight_decay, lr_from_tensor] =
      AdamwAttributes::from(call.attributes);
  if (lr_from_tensor) {
    check_lr_tensor(call, 5);
  } else {
    check_hyperparameter(call, "lr", lr, lr >= 0, ">= 0");
  }
  check_hyperparameter(call, "beta1", beta1, beta1 >= 0 && beta1 < 1, "in [0, 1)");
  check_hyperparameter(call, "beta2", beta2, beta2 >= 0 && beta2 < 1, "in [0, 1)");
  check_hyperparameter(call, "eps", eps, eps >= 0, ">= 0");
  check_hyperparameter(call, "weight_decay", weight_decay, weight_decay >= 0, ">= 0");
  check_tensors(call, 4, kNames);
  const Tensor& step = call.input(4);
  GROVE_OP_CHECK(call, step.numel() == 1 && step.dtype() != DType::Bool,
                 "expected step to be a one-element numeric tensor holding the step number, "
                 "but got ",
                 step.dtype(), step.sizes());
  for (std::size_t i = 0; i < 4; ++i) {
    GROVE_OP_CHECK(call, !overlap(call.input(i), step), kNames[i],
                   " shares memory with step; the step needs its own tensor");
  }
  outputs.in_place = true;
}

constexpr OpEntry kSgd{OpKind::SgdStep, infer_sgd, cpu::sgd, GROVE_CUDA_KERNEL(sgd)};
constexpr OpEntry kAdamw{OpKind::AdamwStep, infer_adamw, cpu::adamw, GROVE_CUDA_KERNEL(adamw)};

}  // namespace

const Tensor& sgd_(const Tensor& param, const Tensor& grad, const Tensor& velocity,
                   const SgdOptions& options) {
  const OpAttributes attributes =
      SgdAttributes{options.lr, options.momentum, options.weight_decay, options.nesterov}
          .to_attributes();
  if (!velocity.defined()) {  // infer refuses this unless momentum is 0
    dispatch(kSgd, {param, grad}, attributes);
  } else {
    dispatch(kSgd, {param, grad, velocity}, attributes);
  }
  return param;
}

const Tensor& sgd_(const Tensor& param, const Tensor& grad, const Tensor& velocity,
                   const Tensor& lr, const SgdOptions& options) {
  const OpAttributes attributes =
      SgdAttributes{options.lr, options.momentum, options.weight_decay, options.nesterov, true}
          .to_attributes();
  if (!velocity.defined()) {  // infer refuses this unless momentum is 0
    dispatch(kSgd, {param, grad, lr}, attributes);
  } else {
    dispatch(kSgd, {param, grad, velocity, lr}, attributes);
  }
  return param;
}

const Tensor& adamw_(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                     const Tensor& exp_avg_sq, const Tensor& step, const AdamwOptions& options) {
  const OpAttributes attributes =
      AdamwAttributes{options.lr, options.beta1, options.beta2, options.eps, options.weight_decay}
          .to_attributes();
  dispatch(kAdamw, {param, grad, exp_avg, exp_avg_sq, step}, attributes);
  return param;
}

const Tensor& adamw_(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                     const Tensor& exp_avg_sq, const Tensor& step, const Tensor& lr,
                     const AdamwOptions& options) {
  const OpAttributes attributes = AdamwAttributes{options.lr,  options.beta1,        options.beta2,
                                                  options.eps, options.weight_decay, true}
                                      .to_attributes();
  dispatch(kAdamw, {param, grad, exp_avg, exp_avg_sq, step, lr}, attributes);
  return param;
}

std::span<const OpEntry> optim_entries() {
  static constexpr OpEntry kEntries[] = {kSgd, kAdamw};
  return kEntries;
}

}  // namespace grove::ops
