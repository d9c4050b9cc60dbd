// The normalisations' inputs as their kernels read them (ops/norm_inputs.h).
#include "ops/norm_inputs.h"

namespace grove::ops {

NormInputs norm_inputs(const OpCall& call, const OpOutputs& outputs) {
  NormInputs inputs;
  inputs.attributes = LayerNormAttributes::from(call.attributes);
  const bool has_weight = inputs.attributes.has_weight;
  const std::size_t bias_index = has_weight ? 2 : 1;
  inputs.x = call.input(0).contiguous();
  inputs.weight = has_weight ? call.input(1).contiguous() : Tensor();
  inputs.bias = call.inputs.size() > bias_index ? call.input(bias_index).contiguous() : Tensor();
  inputs.n = product(inputs.attributes.normalized_shape);
  inputs.m = outputs[1].numel();
  return inputs;
}

NormBackwardInputs norm_backward_inputs(const OpCall& call, std::size_t statistics) {
  NormBackwardInputs inputs;
  inputs.attributes = LayerNormAttributes::from(call.attributes);
  inputs.grad = call.input(0).contiguous();
  inputs.x = call.input(1).contiguous();
  for (std::size_t i = 0; i < statistics; ++i) inputs.stats[i] = call.input(2 + i).contiguous();
  if (inputs.attributes.has_weight) inputs.weight = call.input(2 + statistics).contiguous();
  inputs.n = product(inputs.attributes.normalized_shape);
  inputs.m = inputs.stats[0].numel();
  return inputs;
}

}  // namespace grove::ops
