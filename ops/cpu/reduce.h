// CPU kernels of the reduction family (ops/reduce.h). Each switches on call.kind; the CUDA
// kernels in ops/cuda/reduce.cu have the same names.
#pragma once

#include "ops/dispatch.h"

namespace grove::ops::cpu {

void reduce_sum(const OpCall& call, const OpOutputs& outputs);  // sum, mean, var
void reduce_max(const OpCall& call, const OpOutputs& outputs);  // max (values, indices), argmax

}  // namespace grove::ops::cpu
