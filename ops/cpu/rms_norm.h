// CPU kernels of rms_norm and rms_norm_backward (ops/rms_norm.h).
#pragma once

#include "ops/dispatch.h"

namespace grove::ops::cpu {

void rms_norm(const OpCall& call, const OpOutputs& outputs);           // outputs: y, rrms
void rms_norm_backward(const OpCall& call, const OpOutputs& outputs);  // grad_input, grad_weight

}  // namespace grove::ops::cpu
