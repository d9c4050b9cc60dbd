// CPU kernels of the fused optimizer updates (ops/optim.h); the formulas are in ops/optim_math.h.
#pragma once

#include "ops/dispatch.h"

namespace grove::ops::cpu {

void sgd(const OpCall& call, const OpOutputs& outputs);
void adamw(const OpCall& call, const OpOutputs& outputs);
void unscale_grads(const OpCall& call, const OpOutputs& outputs);
void update_scale(const OpCall& call, const OpOutputs& outputs);

}  // namespace grove::ops::cpu
