// CPU kernels of 2-d pooling and its gradients (ops/pool.h): a direct loop over windows, reading
// the input through its strides (no copy), planes spread over threads when there is enough work.
#pragma once

#include "ops/dispatch.h"

namespace grove::ops::cpu {

void max_pool2d(const OpCall& call, const OpOutputs& outputs);  // values and indices
void avg_pool2d(const OpCall& call, const OpOutputs& outputs);
void max_pool2d_backward(const OpCall& call, const OpOutputs& outputs);
void avg_pool2d_backward(const OpCall& call, const OpOutputs& outputs);

}  // namespace grove::ops::cpu
