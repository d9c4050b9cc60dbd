// CPU kernels of the in-place family (ops/inplace.h). `update` serves every arithmetic update
// (add_, mul_, addcmul_, addcdiv_, lerp_) by switching on call.kind; fill and copy are the
// device-agnostic kernels of ops/copy_kernels.h; uniform and normal reuse the random family's
// fills.
#pragma once

#include "ops/copy_kernels.h"
#include "ops/dispatch.h"

namespace grove::ops::cpu {

void update(const OpCall& call, const OpOutputs& outputs);
using any_device::copy;  // ops/copy_kernels.h, shared with CUDA
using any_device::fill;  // ops/copy_kernels.h, shared with CUDA
void uniform(const OpCall& call, const OpOutputs& outputs);
void normal(const OpCall& call, const OpOutputs& outputs);

}  // namespace grove::ops::cpu
