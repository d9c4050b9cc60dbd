// CPU kernels of the softmax family (ops/softmax.h); the CUDA kernels in ops/cuda/softmax.cu
// will have the same names.
#pragma once

#include "ops/dispatch.h"

namespace grove::ops::cpu {

void softmax(const OpCall& call, const OpOutputs& outputs);        // softmax, log_softmax
void cross_entropy(const OpCall& call, const OpOutputs& outputs);  // loss and per-row lse
void nll_loss(const OpCall& call, const OpOutputs& outputs);

}  // namespace grove::ops::cpu
