// CPU kernels of layer_norm and layer_norm_backward (ops/layer_norm.h).
#pragma once

#include "ops/dispatch.h"

namespace grove::ops::cpu {

void layer_norm(const OpCall& call, const OpOutputs& outputs);  // outputs: y, mean, rstd
// outputs: grad_input, grad_weight, grad_bias
void layer_norm_backward(const OpCall& call, const OpOutputs& outputs);

}  // namespace grove::ops::cpu
