// CPU kernels of the shape family (ops/shape.h): cat, tril/triu (one kernel, switching on
// call.kind) and one_hot.
#pragma once

#include "ops/copy_kernels.h"
#include "ops/dispatch.h"

namespace grove::ops::cpu {

using any_device::cat;  // ops/copy_kernels.h, shared with CUDA
void triangle(const OpCall& call, const OpOutputs& outputs);  // tril, triu
void one_hot(const OpCall& call, const OpOutputs& outputs);

}  // namespace grove::ops::cpu
