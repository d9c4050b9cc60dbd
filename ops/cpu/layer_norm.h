// CPU kernel of layer_norm (ops/layer_norm.h).
#pragma once

#include "ops/dispatch.h"

namespace grove::ops::cpu {

void layer_norm(const OpCall& call, const OpOutputs& outputs);  // outputs: y, mean, rstd

}  // namespace grove::ops::cpu
