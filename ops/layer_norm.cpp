// layer_norm and layer_norm_backward: argument checks, output shapes and the user functions; the
// kernels are in ops/cpu/layer_norm.cpp and ops/cuda/layer_norm.cu.
//
// dispatch() refuses undefined inputs, so absent weight and bias are left out of the input list:
// inputs = (x, weight if has_weight, bias if present). The backward op likewise: inputs = (grad,
// x, mean, rstd, weight if has_weight). Attributes: LayerNormAttributes (ops/attributes.h).
#include "ops/layer_norm.h"

#include <cmath>
#include <vector>

#include "ops/attributes.h"
#include "ops/cpu/layer_norm.h"
#include "ops/cuda/layer_norm.h"
#include "ops/dispatch.h"
#include "ops/normalized_shape.h"
#include "ops/op_table.h"

namespace grove::ops {
namespace {

void infer_layer_norm(const OpCall& call, OutputSpecs& outputs) {
  const Tensor& x = call.input(0);
  const LayerNormAttributes a = LayerNormAttributes::from(call.attributes);
  const double eps = a.eps;
  const DimVector stats_sizes = check_normalized_input(call, x, a.normalized_shape);
  GROVE_OP_CHECK(call, std::isfinite(eps) && eps >= 0.0, "expected a finite eps >= 0, but got ",
                 eps);
  std::size_t next = 1;
  if (a.has_weight) check_norm_parameter(call, x, call.input(next++), a.normalized_shape, "weight");
  if (next < call.inputs.size()) {
    check_norm_parameter(call, x, call.input(next++), a.normalized_shape, "bias");
  }
  GROVE_INTERNAL_ASSERT(next == call.inputs.size(), "layer_norm got unexpected inputs");
  outputs.add(x.sizes(), x.dtype());
  outputs.add(stats_sizes, compute_dtype(x.dtype()));  // mean
  outputs.add(stats_sizes, compute_dtype(x.dtype()));  // rstd
}

// grad, x: (*, N1, ..., Nk); mean, rstd: (*, 1, ..., 1); weight (if has_weight):
// normalized_shape.
void infer_layer_norm_backward(const OpCall& call, OutputSpecs& outputs) {
  const Tensor& grad = call.input(0);
  const Tensor& x = call.input(1);
  const LayerNormAttributes a = LayerNormAttributes::from(call.attributes);
  const DimVector stats_sizes = check_normalized_input(call, x, a.normalized_shape);
  GROVE_OP_CHECK(call, grad.sizes() == x.sizes() && grad.dtype() == x.dtype(),
                 "expected grad of the input's shape and dtype ", x.dtype(), x.sizes(),
                 ", but got ", grad.dtype(), grad.sizes());
  const char* names[] = {"mean", "rstd"};
  for (std::size_t i = 0; i < 2; ++i) {
    const Tensor& stat = call.input(2 + i);
    GROVE_OP_CHECK(
        call, stat.sizes() == IntArrayRef(stats_sizes) && stat.dtype() == compute_dtype(x.dtype()),
        "expected ", names[i], " of shape and dtype ", compute_dtype(x.dtype()),
        IntArrayRef(stats_sizes), " (layer_norm_with_stats' output for this input), but got ",
        stat.dtype(), stat.sizes());
  }
  if (a.has_weight) check_norm_parameter(call, x, call.input(4), a.normalized_shape, "weight");
  GROVE_INTERNAL_ASSERT(call.inputs.size() == (a.has_weight ? 5u : 4u),
                        "layer_norm_backward got unexpected inputs");
  outputs.add(x.sizes(), x.dtype());           // grad_input
  outputs.add(a.normalized_shape, x.dtype());  // grad_weight
  outputs.add(a.normalized_shape, x.dtype());  // grad_bias
}

// (x[, weight][, bias]): has_weight says whether the weight is there.
InputCount layer_norm_input_count(const OpAttributes& attributes) {
  const std::size_t weight = LayerNormAttributes::from(attributes).has_weight ? 1 : 0;
  return {1 + weight, 2 + weight};
}
// (grad, x, mean, rstd[, weight]).
InputCount layer_norm_backward_input_count(const OpAttributes& attributes) {
  return InputCount::exactly(LayerNormAttributes::from(attributes).has_weight ? 5 : 4);
}
std::string describe_layer_norm(const OpAttributes& a) {
  return LayerNormAttributes::from(a).describe(/*with_eps=*/true);
}
std::string describe_layer_norm_backward(const OpAttributes& a) {
  return LayerNormAttributes::from(a).describe(/*with_eps=*/false);
}

constexpr InputSpec kLayerNormInputs[] = {
    {"x"}, {"weight", InputDTypes::Floating, true}, {"bias", InputDTypes::Floating, true}};
constexpr InputSpec kLayerNormBackwardInputs[] = {{"grad"},
                                                  {"x"},
                                                  {"mean", InputDTypes::Statistics},
                                                  {"rstd", InputDTypes::Statistics},
                                                  {"weight", InputDTypes::Floating, true}};

// Outputs: y, mean, rstd.
constexpr OpEntry kLayerNorm{.kind = OpKind::LayerNorm,
                             .inputs = kLayerNormInputs,
                             .infer = infer_layer_norm,
                             .cpu = cpu::layer_norm,
                             .cuda = GROVE_CUDA_KERNEL(layer_norm),
                             .describe = describe_layer_norm,
                             .input_count = layer_norm_input_count};
// Outputs: grad_input, grad_weight, grad_bias.
constexpr OpEntry kLayerNormBackward{.kind = OpKind::LayerNormBackward,
                                     .inputs = kLayerNormBackwardInputs,
                                     .infer = infer_layer_norm_backward,
                                     .cpu = cpu::layer_norm_backward,
                                     .cuda = GROVE_CUDA_KERNEL(layer_norm_backward),
                                     .describe = describe_layer_norm_backward,
                                     .input_count = layer_norm_backward_input_count};

}  // namespace

LayerNormResult layer_norm_with_stats(const Tensor& x, IntArrayRef normalized_shape,
                                      const Tensor& weight, const Tensor& bias, double eps) {
  const LayerNormAttributes attributes{DimVector(normalized_shape), eps, weight.defined()};
  std::vector<Tensor> inputs{x};
  if (weight.defined()) inputs.push_back(weight);
  if (bias.defined()) inputs.push_back(bias);
  OpOutputs outputs = dispatch(kLayerNorm, inputs, attributes.to_attributes());
  return {outputs[0], outputs[1], outputs[2]};
}

Tensor layer_norm(const Tensor& x, IntArrayRef normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
  return layer_norm_with_stats(x, normalized_shape, weight, bias, eps).output;
}

LayerNormGrads layer_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& mean,
                                   const Tensor& rstd, IntArrayRef normalized_shape,
                                   const Tensor& weight) {
  const LayerNormAttributes attributes{DimVector(normalized_shape), 0.0, weight.defined()};
  std::vector<Tensor> inputs{grad, x, mean, rstd};
  if (weight.defined()) inputs.push_back(weight);
  OpOutputs outputs = dispatch(kLayerNormBackward, inputs, attributes.to_attributes());
  return {outputs[0], outputs[1], outputs[2]};
}

std::span<const OpEntry> layer_norm_entries() {
  static constexpr OpEntry kEntries[] = {kLayerNorm, kLayerNormBackward};
  return kEntries;
}

}  // namespace grove::ops
