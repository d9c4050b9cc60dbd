// Fused optimizer updates: argument checks and the user functions. Kernels are in
// ops/cpu/optim.cpp and ops/cuda/optim.cu; the per-element math is shared (ops/optim_math.h).
#include "ops/optim.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "ops/attributes.h"
#include "ops/cpu/optim.h"
#include "ops/cuda/kernel_entry.h"
#include "ops/cuda/optim.h"
#include "ops/dispatch.h"
#include "ops/op_table.h"
#include "ops/optim_math.h"

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

// The name of operand `operand` (kNames: "param", "grad", states) of parameter `param`, for the
// messages: "velocity" in a call of one parameter, "velocity 3" in a call of several.
std::string operand_name(const char* const* names, std::size_t operand, std::size_t param,
                         std::size_t params) {
  return params == 1 ? std::string(names[operand]) : str(names[operand], " ", param);
}

// The parameters, gradients and states (Note [One update over many parameters] in
// ops/optim.h): one floating dtype, each parameter's operands its shape, no two overlapping.
void check_tensors(const OpCall& call, const char* const* names) {
  const std::size_t params = optim_params(call);
  const std::size_t operands = optim_tensors(call);
  const DType dtype = call.input(0).dtype();
  GROVE_OP_CHECK(call, dtype == DType::Float32 || dtype == DType::Float64,
                 "expected a float32 or float64 parameter, but got ", dtype);
  for (std::size_t p = 0; p < params; ++p) {
    const Tensor& param = optim_operand(call, 0, p);
    for (std::size_t k = 0; k < operands; ++k) {
      const Tensor& t = optim_operand(call, k, p);
      GROVE_OP_CHECK(call, t.dtype() == dtype, "expected ", operand_name(names, k, p, params),
                     params == 1 ? " to have the parameter's dtype " : " to have param 0's dtype ",
                     dtype, ", but got ", t.dtype(),
                     params > 1 ? " (one call updates parameters of one dtype)" : "");
      GROVE_OP_CHECK(call, t.sizes() == param.sizes(), "expected ",
                     operand_name(names, k, p, params), " to have the parameter's sizes ",
                     param.sizes(), ", but got ", t.sizes());
    }
    // The states are written like the parameter, whose layout dispatch checks.
    for (std::size_t k = 2; k < operands; ++k) {
      const Tensor& t = optim_operand(call, k, p);
      GROVE_OP_CHECK(call, !has_internal_overlap(t.sizes(), t.strides()),
                     operand_name(names, k, p, params),
                     " has elements that share memory (an expanded view, strides ", t.strides(),
                     "); each element needs its own: clone() it");
    }
  }
  // No two tensors overlap: sorted by storage and first byte, each is checked against the one
  // reaching furthest among those before it on its storage.
  struct Span {
    const void* storage;
    const char* begin;
    const char* end;
    std::size_t operand;
    std::size_t param;
  };
  std::vector<Span> spans;
  spans.reserve(params * operands);
  for (std::size_t k = 0; k < operands; ++k) {
    for (std::size_t p = 0; p < params; ++p) {
      const Tensor& t = optim_operand(call, k, p);
      if (t.numel() == 0) continue;
      spans.push_back({t.storage().get(), static_cast<const char*>(t.data_ptr()), end_of(t), k, p});
    }
  }
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    return a.storage != b.storage ? std::less<>()(a.storage, b.storage) : a.begin < b.begin;
  });
  for (std::size_t i = 1, furthest = 0; i < spans.size(); ++i) {
    const Span& a = spans[furthest];
    const Span& b = spans[i];
    if (a.storage != b.storage) {
      furthest = i;
      continue;
    }
    const bool a_first = a.operand != b.operand ? a.operand < b.operand : a.param < b.param;
    const Span& first = a_first ? a : b;
    const Span& second = a_first ? b : a;
    GROVE_OP_CHECK(call, b.begin >= a.end, operand_name(names, first.operand, first.param, params),
                   " and ", operand_name(names, second.operand, second.param, params),
                   " share memory; each needs its own (clone() one of them)");
    if (b.end > a.end) furthest = i;
  }
}

// The parameter count of a call over several parameters (the attribute `params`).
void check_param_count(const OpCall& call, std::int64_t params, std::size_t per_param,
                       std::size_t others) {
  GROVE_OP_CHECK(call, params >= 1 && params <= kMaxOptimParams,
                 "expected params (the number of parameters the call updates) in [1, ",
                 kMaxOptimParams, "], but got ", params);
  GROVE_OP_CHECK(call, call.inputs.size() == static_cast<std::size_t>(params) * per_param + others,
                 "expected ", per_param, " tensors for each of the ", params,
                 " parameters, grouped by kind (all parameters, then all gradients, then each "
                 "state's), then ",
                 others, " more, but got ", call.inputs.size(), " inputs");
}

void check_hyperparameter(const OpCall& call, const char* name, double value, bool ok,
                          const char* expected) {
  GROVE_OP_CHECK(call, std::isfinite(value) && ok, "expected ", name, " ", expected, ", but got ",
                 value);
}

// The learning-rate tensor (the call's last input, or the one before found_inf): one floating
// element, its own memory.
void check_lr_tensor(const OpCall& call, std::size_t tensors, bool skips) {
  const Tensor& lr = call.inputs[call.inputs.size() - (skips ? 2 : 1)];
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

// GradScaler's flag (the call's last input when it skips on it): one float32 element, its own
// memory (Note [Loss scaling on the device]).
void check_found_inf(const OpCall& call, std::size_t tensors) {
  const Tensor& found_inf = call.inputs.back();
  GROVE_OP_CHECK(call, found_inf.numel() == 1 && found_inf.dtype() == DType::Float32,
                 "expected found_inf to be a one-element float32 tensor (GradScaler's flag), but "
                 "got ",
                 found_inf.dtype(), found_inf.sizes());
  for (std::size_t i = 0; i < tensors; ++i) {
    GROVE_OP_CHECK(call, !overlap(call.input(i), found_inf), "input ", i,
                   " shares memory with found_inf; the flag needs its own tensor");
  }
}

// Inputs (param, grad[, velocity][, lr][, found_inf]), or n params, n grads[, n velocities][, lr]
// [, found_inf]. Attributes: SgdAttributes (ops/attributes.h).
void infer_sgd(const OpCall& call, OutputSpecs& outputs) {
  static const char* const kNames[] = {"param", "grad", "velocity"};
  const auto [lr, momentum, weight_decay, nesterov, lr_from_tensor, params, skips] =
      SgdAttributes::from(call.attributes);
  const std::size_t others = (lr_from_tensor ? 1 : 0) + (skips ? 1 : 0);
  if (params != 1) check_param_count(call, params, momentum != 0 ? 3 : 2, others);
  const std::size_t tensors = call.inputs.size() - others;
  if (skips) check_found_inf(call, tensors);
  if (lr_from_tensor) {
    check_lr_tensor(call, tensors, skips);
  } else {
    check_hyperparameter(call, "lr", lr, lr >= 0, ">= 0");
  }
  check_hyperparameter(call, "momentum", momentum, momentum >= 0, ">= 0");
  check_hyperparameter(call, "weight_decay", weight_decay, weight_decay >= 0, ">= 0");
  GROVE_OP_CHECK(call, !nesterov || momentum > 0, "nesterov needs momentum > 0, but momentum is ",
                 momentum);
  GROVE_OP_CHECK(call, momentum == 0 || tensors == 3 * static_cast<std::size_t>(params),
                 "momentum ", momentum,
                 " needs a velocity tensor for each parameter (zeros_like(param) at first)");
  check_tensors(call, kNames);
  outputs.in_place = true;
}

// Inputs (param, grad, exp_avg, exp_avg_sq, step[, lr][, found_inf]), or n of each of the first
// four, then step[, lr][, found_inf]. Attributes: AdamwAttributes.
void infer_adamw(const OpCall& call, OutputSpecs& outputs) {
  static const char* const kNames[] = {"param", "grad", "exp_avg", "exp_avg_sq"};
  const auto [lr, beta1, beta2, eps, weight_decay, lr_from_tensor, params, skips] =
      AdamwAttributes::from(call.attributes);
  if (params != 1) {
    check_param_count(call, params, 4, 1 + (lr_from_tensor ? 1 : 0) + (skips ? 1 : 0));
  }
  const std::size_t tensors = 4 * static_cast<std::size_t>(params);
  if (skips) check_found_inf(call, tensors + 1);
  if (lr_from_tensor) {
    check_lr_tensor(call, tensors + 1, skips);
  } else {
    check_hyperparameter(call, "lr", lr, lr >= 0, ">= 0");
  }
  check_hyperparameter(call, "beta1", beta1, beta1 >= 0 && beta1 < 1, "in [0, 1)");
  check_hyperparameter(call, "beta2", beta2, beta2 >= 0 && beta2 < 1, "in [0, 1)");
  check_hyperparameter(call, "eps", eps, eps >= 0, ">= 0");
  check_hyperparameter(call, "weight_decay", weight_decay, weight_decay >= 0, ">= 0");
  check_tensors(call, kNames);
  const Tensor& step = call.input(tensors);
  GROVE_OP_CHECK(call, step.numel() == 1 && step.dtype() != DType::Bool,
                 "expected step to be a one-element numeric tensor holding the step number, "
                 "but got ",
                 step.dtype(), step.sizes());
  for (std::size_t i = 0; i < tensors; ++i) {
    GROVE_OP_CHECK(
        call, !overlap(call.input(i), step),
        operand_name(kNames, i / static_cast<std::size_t>(params),
                     i % static_cast<std::size_t>(params), static_cast<std::size_t>(params)),
        " shares memory with step; the step needs its own tensor");
  }
  outputs.in_place = true;
}

// A one-element float32 tensor of the loss-scaling ops (ops/optim.h).
void check_flag(const OpCall& call, const Tensor& t, const char* name, DType dtype) {
  GROVE_OP_CHECK(call, t.numel() == 1 && t.dtype() == dtype, "expected ", name, " to be a ",
                 "one-element ", dtype, " tensor, but got ", t.dtype(), t.sizes());
}

// Inputs (grads..., found_inf, scale). Attributes: UnscaleAttributes.
void infer_unscale(const OpCall& call, OutputSpecs& outputs) {
  const std::int64_t grads = UnscaleAttributes::from(call.attributes).grads;
  GROVE_OP_CHECK(call, grads >= 1 && grads <= kMaxOptimParams, "expected grads (the number of ",
                 "gradients) in [1, ", kMaxOptimParams, "], but got ", grads);
  const auto n = static_cast<std::size_t>(grads);
  GROVE_OP_CHECK(call, call.inputs.size() == n + 2, "expected the ", n,
                 " gradients, then found_inf and scale, but got ", call.inputs.size(), " inputs");
  const Tensor& found_inf = call.input(n);
  const Tensor& scale = call.input(n + 1);
  check_flag(call, found_inf, "found_inf", DType::Float32);
  check_flag(call, scale, "scale", DType::Float32);
  GROVE_OP_CHECK(call, !overlap(found_inf, scale), "found_inf and scale share memory");
  for (std::size_t i = 0; i < n; ++i) {
    const Tensor& grad = call.input(i);
    GROVE_OP_CHECK(call, is_floating_point(grad.dtype()), "expected floating-point gradients, ",
                   "but gradient ", i, " is ", grad.dtype());
    GROVE_OP_CHECK(call, !overlap(grad, found_inf) && !overlap(grad, scale), "gradient ", i,
                   " shares memory with found_inf or scale; each needs its own tensor");
  }
  for (std::size_t i = 1; i < n; ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (!call.input(i).is_alias_of(call.input(j))) continue;  // the usual case: cheap
      GROVE_OP_CHECK(call, !overlap(call.input(i), call.input(j)), "gradients ", j, " and ", i,
                     " share memory; each would be unscaled twice");
    }
  }
  outputs.in_place = true;
}

// Inputs (scale, growth_tracker, found_inf). Attributes: UpdateScaleAttributes.
void infer_update_scale(const OpCall& call, OutputSpecs& outputs) {
  const auto [growth, backoff, interval] = UpdateScaleAttributes::from(call.attributes);
  check_hyperparameter(call, "growth_factor", growth, growth > 1, "> 1");
  check_hyperparameter(call, "backoff_factor", backoff, backoff > 0 && backoff < 1, "in (0, 1)");
  GROVE_OP_CHECK(call, interval >= 1 && interval <= INT32_MAX, "expected growth_interval in [1, ",
                 INT32_MAX, "], but got ", interval);
  check_flag(call, call.input(0), "scale", DType::Float32);
  check_flag(call, call.input(1), "growth_tracker", DType::Int32);
  check_flag(call, call.input(2), "found_inf", DType::Float32);
  GROVE_OP_CHECK(call,
                 !overlap(call.input(0), call.input(1)) && !overlap(call.input(0), call.input(2)) &&
                     !overlap(call.input(1), call.input(2)),
                 "scale, growth_tracker and found_inf must not share memory");
  outputs.in_place = true;
}

InputCount unscale_input_count(const OpAttributes& attributes) {
  const std::int64_t grads = UnscaleAttributes::from(attributes).grads;
  if (grads < 1 || grads > kMaxOptimParams) return {0, InputCount::kAny};  // infer says why
  return InputCount::exactly(static_cast<std::size_t>(grads) + 2);
}

std::size_t unscale_writes(const OpAttributes& attributes) {
  const std::int64_t grads = UnscaleAttributes::from(attributes).grads;
  return grads >= 1 && grads <= kMaxOptimParams ? static_cast<std::size_t>(grads) : 1;
}

// A parameter count infer_sgd and infer_adamw accept (they refuse others with their own
// message, so the counts below accept any number of inputs for them).
bool valid_param_count(std::int64_t params) {
  return params >= 1 && params <= kMaxOptimParams;
}

// (param, grad[, velocity][, lr][, found_inf]), or n of each but lr and found_inf.
InputCount sgd_input_count(const OpAttributes& attributes) {
  const SgdAttributes a = SgdAttributes::from(attributes);
  const std::size_t others = (a.lr_from_tensor ? 1 : 0) + (a.skip_if_found_inf ? 1 : 0);
  if (a.params == 1) return {2 + others, 3 + others};
  if (!valid_param_count(a.params)) return {0, InputCount::kAny};
  const auto n = static_cast<std::size_t>(a.params);
  return InputCount::exactly(n * (a.momentum != 0 ? 3 : 2) + others);
}

// (param, grad, exp_avg, exp_avg_sq, step[, lr][, found_inf]), n of each of the first four.
InputCount adamw_input_count(const OpAttributes& attributes) {
  const AdamwAttributes a = AdamwAttributes::from(attributes);
  if (!valid_param_count(a.params)) return {0, InputCount::kAny};
  return InputCount::exactly(4 * static_cast<std::size_t>(a.params) + 1 +
                             (a.lr_from_tensor ? 1 : 0) + (a.skip_if_found_inf ? 1 : 0));
}

// Both write their n parameters, inputs [0, n); the states they also write are
// optimizer-internal (ops/optim.h).
std::size_t written_params(std::int64_t params) {
  return valid_param_count(params) ? static_cast<std::size_t>(params) : 1;
}
std::size_t sgd_writes(const OpAttributes& attributes) {
  return written_params(SgdAttributes::from(attributes).params);
}
std::size_t adamw_writes(const OpAttributes& attributes) {
  return written_params(AdamwAttributes::from(attributes).params);
}

// The layout for one parameter; n parameters repeat each of the per-parameter inputs n times.
constexpr InputSpec kSgdInputs[] = {{"param"},
                                    {"grad"},
                                    {"velocity", InputDTypes::Floating, true},
                                    {"lr", InputDTypes::Floating, true},
                                    {"found_inf", InputDTypes::Count, true}};
constexpr InputSpec kAdamwInputs[] = {{"param"},
                                      {"grad"},
                                      {"exp_avg"},
                                      {"exp_avg_sq"},
                                      {"step", InputDTypes::Count},
                                      {"lr", InputDTypes::Floating, true},
                                      {"found_inf", InputDTypes::Count, true}};

// One gradient's layout (a call over n gradients repeats it n times, then the two flags).
constexpr InputSpec kUnscaleInputs[] = {
    {"grad"}, {"found_inf", InputDTypes::Count}, {"scale", InputDTypes::Count}};
constexpr InputSpec kUpdateScaleInputs[] = {{"scale", InputDTypes::Count},
                                            {"growth_tracker", InputDTypes::Count},
                                            {"found_inf", InputDTypes::Count}};

constexpr OpEntry kSgd{.kind = OpKind::SgdStep,
                       .inputs = kSgdInputs,
                       .infer = infer_sgd,
                       .cpu = cpu::sgd,
                       .cuda = GROVE_CUDA_KERNEL(sgd),
                       .describe = describe_as<SgdAttributes>,
                       .input_count = sgd_input_count,
                       .in_place_writes = sgd_writes};
constexpr OpEntry kAdamw{.kind = OpKind::AdamwStep,
                         .inputs = kAdamwInputs,
                         .infer = infer_adamw,
                         .cpu = cpu::adamw,
                         .cuda = GROVE_CUDA_KERNEL(adamw),
                         .describe = describe_as<AdamwAttributes>,
                         .input_count = adamw_input_count,
                         .in_place_writes = adamw_writes};
constexpr OpEntry kUnscale{.kind = OpKind::UnscaleGrads,
                           .inputs = kUnscaleInputs,
                           .infer = infer_unscale,
                           .cpu = cpu::unscale_grads,
                           .cuda = GROVE_CUDA_KERNEL(unscale_grads),
                           .describe = describe_as<UnscaleAttributes>,
                           .input_count = unscale_input_count,
                           .in_place_writes = unscale_writes};
constexpr OpEntry kUpdateScale{.kind = OpKind::UpdateScale,
                               .inputs = kUpdateScaleInputs,
                               .infer = infer_update_scale,
                               .cpu = cpu::update_scale,
                               .cuda = GROVE_CUDA_KERNEL(update_scale),
                               .describe = describe_as<UpdateScaleAttributes>};

}  // namespace

const Tensor& sgd_(const Tensor& param, const Tensor& grad, const Tensor& velocity,
                   const SgdHyperparameters& options) {
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
                   const Tensor& lr, const SgdHyperparameters& options) {
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
                     const Tensor& exp_avg_sq, const Tensor& step,
                     const AdamwHyperparameters& options) {
  const OpAttributes attributes =
      AdamwAttributes{options.lr, options.beta1, options.beta2, options.eps, options.weight_decay}
          .to_attributes();
  dispatch(kAdamw, {param, grad, exp_avg, exp_avg_sq, step}, attributes);
  return param;
}

const Tensor& adamw_(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                     const Tensor& exp_avg_sq, const Tensor& step, const Tensor& lr,
                     const AdamwHyperparameters& options) {
  const OpAttributes attributes = AdamwAttributes{options.lr,  options.beta1,        options.beta2,
                                                  options.eps, options.weight_decay, true}
                                      .to_attributes();
  dispatch(kAdamw, {param, grad, exp_avg, exp_avg_sq, step, lr}, attributes);
  return param;
}

namespace {

// Checks the lists' lengths against the parameters' and appends `list` to `inputs`.
void append_list(std::vector<Tensor>& inputs, std::span<const Tensor> list, std::size_t params,
                 const char* op, const char* name) {
  GROVE_CHECK(list.size() == params, op, ": expected one ", name, " for each of the ", params,
              " parameters, but got ", list.size());
  inputs.insert(inputs.end(), list.begin(), list.end());
}

}  // namespace

void sgd_(std::span<const Tensor> params, std::span<const Tensor> grads,
          std::span<const Tensor> velocities, const Tensor& lr, const SgdHyperparameters& options,
          const Tensor& found_inf) {
  GROVE_CHECK(!params.empty(), "sgd_: expected at least one parameter, but the list is empty");
  const SgdAttributes attributes{options.lr,           options.momentum,
                                 options.weight_decay, options.nesterov,
                                 lr.defined(),         static_cast<std::int64_t>(params.size()),
                                 found_inf.defined()};
  std::vector<Tensor> inputs;
  inputs.reserve(3 * params.size() + 1);
  append_list(inputs, params, params.size(), "sgd_", "parameter");
  append_list(inputs, grads, params.size(), "sgd_", "gradient");
  if (options.momentum != 0 || !velocities.empty()) {
    GROVE_CHECK(options.momentum != 0,
                "sgd_: velocities are for momentum != 0; with momentum 0, "
                "pass none (an empty list)");
    append_list(inputs, velocities, params.size(), "sgd_", "velocity");
  }
  if (lr.defined()) inputs.push_back(lr);
  if (found_inf.defined()) inputs.push_back(found_inf);
  dispatch(kSgd, inputs, attributes.to_attributes());
}

void adamw_(std::span<const Tensor> params, std::span<const Tensor> grads,
            std::span<const Tensor> exp_avgs, std::span<const Tensor> exp_avg_sqs,
            const Tensor& step, const Tensor& lr, const AdamwHyperparameters& options,
            const Tensor& found_inf) {
  GROVE_CHECK(!params.empty(), "adamw_: expected at least one parameter, but the list is empty");
  const AdamwAttributes attributes{options.lr,
                                   options.beta1,
                                   options.beta2,
                                   options.eps,
                                   options.weight_decay,
                                   lr.defined(),
                                   static_cast<std::int64_t>(params.size()),
                                   found_inf.defined()};
  std::vector<Tensor> inputs;
  inputs.reserve(4 * params.size() + 2);
  append_list(inputs, params, params.size(), "adamw_", "parameter");
  append_list(inputs, grads, params.size(), "adamw_", "gradient");
  append_list(inputs, exp_avgs, params.size(), "adamw_", "exp_avg");
  append_list(inputs, exp_avg_sqs, params.size(), "adamw_", "exp_avg_sq");
  inputs.push_back(step);
  if (lr.defined()) inputs.push_back(lr);
  if (found_inf.defined()) inputs.push_back(found_inf);
  dispatch(kAdamw, inputs, attributes.to_attributes());
}

void unscale_grads_(std::span<const Tensor> grads, const Tensor& found_inf, const Tensor& scale) {
  GROVE_CHECK(!grads.empty(),
              "unscale_grads_: expected at least one gradient, but the list is "
              "empty");
  std::vector<Tensor> inputs(grads.begin(), grads.end());
  inputs.push_back(found_inf);
  inputs.push_back(scale);
  dispatch(kUnscale, inputs,
           UnscaleAttributes{static_cast<std::int64_t>(grads.size())}.to_attributes());
}

const Tensor& update_scale_(const Tensor& scale, const Tensor& growth_tracker,
                            const Tensor& found_inf, double growth_factor, double backoff_factor,
                            std::int64_t growth_interval) {
  dispatch(kUpdateScale, {scale, growth_tracker, found_inf},
           UpdateScaleAttributes{growth_factor, backoff_factor, growth_interval}.to_attributes());
  return scale;
}

std::span<const OpEntry> optim_entries() {
  static constexpr OpEntry kEntries[] = {kSgd, kAdamw, kUnscale, kUpdateScale};
  return kEntries;
}

}  // namespace grove::ops
