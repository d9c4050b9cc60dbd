// CPU kernels of attention and attention_backward (ops/attention.h), the reference of the CUDA
// kernels.
#pragma once

#include "ops/dispatch.h"

namespace grove::ops::cpu {

void attention(const OpCall& call, const OpOutputs& outputs);           // outputs: out, lse
void attention_backward(const OpCall& call, const OpOutputs& outputs);  // grad_q, grad_k, grad_v

}  // namespace grove::ops::cpu
