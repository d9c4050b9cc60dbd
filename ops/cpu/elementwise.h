// CPU kernels of the elementwise family (ops/elementwise.h). One kernel per shape of op; each
// switches on call.kind (the CUDA kernels in ops/cuda/elementwise.cu will have the same names).
#pragma once

#include "ops/dispatch.h"

namespace grove::ops::cpu {

void binary(const OpCall& call, const OpOutputs& outputs);  // arithmetic and comparisons
void where(const OpCall& call, const OpOutputs& outputs);
void masked_fill(const OpCall& call, const OpOutputs& outputs);
void unary(const OpCall& call, const OpOutputs& outputs);          // unary math, clamp
void gelu_backward(const OpCall& call, const OpOutputs& outputs);  // inputs: grad, x
void relu_backward(const OpCall& call, const OpOutputs& outputs);  // inputs: grad, y

}  // namespace grove::ops::cpu
