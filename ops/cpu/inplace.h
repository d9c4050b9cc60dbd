// CPU kernels of the in-place family (ops/inplace.h). `update` serves every arithmetic update
// (add_, mul_, addcmul_, addcdiv_, lerp_) by switching on call.kind; fill and copy reuse core's
// launch_fill / launch_copy; uniform and normal reuse the random family's fills.
#pragma once

#include "ops/dispatch.h"

namespace grove::ops::cpu {

void update(const OpCall& call, const OpOutputs& outputs);
void fill(const OpCall& call, const OpOutputs& outputs);
void copy(const OpCall& call, const OpOutputs& outputs);
void uniform(const OpCall& call, const OpOutputs& outputs);
void normal(const OpCall& call, const OpOutputs& outputs);

// `operand` itself, or a copy of it when it shares memory with x other than element for element
// (x.add_(x) is fine): otherwise an element could be read after the update overwrote it. Used by
// the CPU and CUDA update kernels alike; the copy is made on x's device and current stream.
Tensor unaliased(const Tensor& x, const Tensor& operand);

}  // namespace grove::ops::cpu
