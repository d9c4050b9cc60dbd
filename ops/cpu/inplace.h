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

}  // namespace grove::ops::cpu
