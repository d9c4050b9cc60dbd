// rms_norm and rms_norm_backward: argument checks, output shapes and the user functions; the
// kernels are in ops/cpu/rms_norm.cpp and ops/cuda/rms_norm.cu.
//
// An absent weight is left out of the input list (dispatch refuses undefined inputs): inputs =
// (x, weight if has_weight); the backward op's = (grad, x, rrms, weight if has_weight).
// Attributes: LayerNormAttributes (ops/attributes.h), the layout layer_norm uses.
#include "ops/rms_norm.h"

#include <cmath>
#include <limits>
#include <vector>

#include "ops/attributes.h"
#include "ops/cpu/rms_norm.h"
#include "ops/cuda/rms_norm.h"
#include "ops/dispatch.h"
#include "ops/normalized_shape.h"
#include "ops/op_table.h"

namespace grove::ops {
namespace {

// x: (*, N1, ..., Nk); weight (if has_weight): normalized_shape.
void infer_rms_norm(const OpCall& call, OutputSpecs& outputs) {
  const Tensor& x = call.input(0);
  const LayerNormAttributes a = LayerNormAttributes::from(call.attributes);
  const DimVector stats_sizes = check_normalized_input(call, x, a.normalized_shape);
  GROVE_OP_CHECK(call, std::isfinite(a.eps) && a.eps >= 0.0, "expected a finite eps >= 0, but got ",
                 a.eps);
  if (a.has_weight) check_norm_parameter(call, x, call.input(1), a.normalized_shape, "weight");
  outputs.add(x.sizes(), x.dtype());                   // y
  outputs.add(stats_sizes, compute_dtype(x.dtype()));  // rrms
}

// grad, x: (*, N1, ..., Nk); rrms: (*, 1, ..., 1); weight (if has_weight): normalized_shape.
void infer_rms_norm_backward(const OpCall& call, OutputSpecs& outputs) {
  const Tensor& grad = call.input(0);
  const Tensor& x = call.input(1);
  const Tensor& rrms = call.input(2);
  const LayerNormAttributes a = LayerNormAttributes::from(call.attributes);
  const DimVector stats_sizes = check_normalized_input(call, x, a.normalized_shape);
  GROVE_OP_CHECK(call, grad.sizes() == x.sizes() && grad.dtype() == x.dtype(),
                 "expected grad of the input's shape and dtype ", x.dtype(), x.sizes(),
                 ", but got ", grad.dtype(), grad.sizes());
  GROVE_OP_CHECK(
      call, rrms.sizes() == IntArrayRef(stats_sizes) && rrms.dtype() == compute_dtype(x.dtype()),
      "expected rrms of shape and dtype ", compute_dtype(x.dtype()), IntArrayRef(stats_sizes),
      " (rms_norm_with_stats' output for this input), but got ", rrms.dtype(), rrms.sizes());
  if (a.has_weight) check_norm_parameter(call, x, call.input(3), a.normalized_shape, "weight");
  outputs.add(x.sizes(), x.dtype());           // grad_input
  outputs.add(a.normalized_shape, x.dtype());  // grad_weight
}

// (x[, weight]) and (grad, x, rrms[, weight]): has_weight says whether the weight is there.
InputCount rms_norm_input_count(const OpAttributes& attributes) {
  return InputCount::exactly(LayerNormAttributes::from(attributes).has_weight ? 2 : 1);
}
InputCount rms_norm_backward_input_count(const OpAttributes& attributes) {
  return InputCount::exactly(LayerNormAttributes::from(attributes).has_weight ? 4 : 3);
}
std::string describe_rms_norm(const OpAttributes& a) {
  return LayerNormAttributes::from(a).describe(/*with_eps=*/true);
}
std::string describe_rms_norm_backward(const OpAttributes& a) {
  return LayerNormAttributes::from(a).describe(/*with_eps=*/false);
}

constexpr InputSpec kRmsNormInputs[] = {{"x"}, {"weight", InputDTypes::Floating, true}};
constexpr InputSpec kRmsNormBackwardInputs[] = {
    {"grad"}, {"x"}, {"rrms", InputDTypes::Statistics}, {"weight", InputDTypes::Floating, true}};

// Outputs: y, rrms.
constexpr OpEntry kRmsNorm{.kind = OpKind::RmsNorm,
                           .inputs = kRmsNormInputs,
                           .infer = infer_rms_norm,
                           .cpu = cpu::rms_norm,
                           .cuda = GROVE_CUDA_KERNEL(rms_norm),
                           .describe = describe_rms_norm,
                           .input_count = rms_norm_input_count};
// Outputs: grad_input, grad_weight.
constexpr OpEntry kRmsNormBackward{.kind = OpKind::RmsNormBackward,
                                   .inputs = kRmsNormBackwardInputs,
                                   .infer = infer_rms_norm_backward,
                                   .cpu = cpu::rms_norm_backward,
                                   .cuda = GROVE_CUDA_KERNEL(rms_norm_backward),
                                   .describe = describe_rms_norm_backward,
                                   .input_count = rms_norm_backward_input_count};

// PyTorch's default: the machine epsilon of x's dtype.
double default_eps(DType dtype) {
  return dtype == DType::Float64 ? std::numeric_limits<double>::epsilon()
                                 : std::numeric_limits<float>::epsilon();
}

}  // namespace

RmsNormResult rms_norm_with_stats(const Tensor& x, IntArrayRef normalized_shape,
                                  const Tensor& weight, std::optional<double> eps) {
  const double eps_value =
      eps.has_value() ? *eps : default_eps(x.defined() ? x.dtype() : DType::Float32);
  const LayerNormAttributes attributes{DimVector(normalized_shape), eps_value, weight.defined()};
  std::vector<Tensor> inputs{x};
  if (weight.defined()) inputs.push_back(weight);
  OpOutputs outputs = dispatch(kRmsNorm, inputs, attributes.to_attributes());
  return {outputs[0], outputs[1]};
}

Tensor rms_norm(const Tensor& x, IntArrayRef normalized_shape, const Tensor& weight,
                std::optional<double> eps) {
  return rms_norm_with_stats(x, normalized_shape, weight, eps).output;
}

RmsNormGrads rms_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& rrms,
                               IntArrayRef normalized_shape, const Tensor& weight) {
  const LayerNormAttributes attributes{DimVector(normalized_shape), 0.0, weight.defined()};
  std::vector<Tensor> inputs{grad, x, rrms};
  if (weight.defined()) inputs.push_back(weight);
  OpOutputs outputs = dispatch(kRmsNormBackward, inputs, attributes.to_attributes());
  return {outputs[0], outputs[1]};
}

std::span<const OpEntry> rms_norm_entries() {
  static constexpr OpEntry kEntries[] = {kRmsNorm, kRmsNormBackward};
  return kEntries;
}

}  // namespace grove::ops
