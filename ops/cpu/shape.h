// CPU kernels of the shape family (ops/shape.h): cat, tril/triu (one kernel, switching on
// call.kind) and one_hot.
#pragma once

#include "ops/dispatch.h"

namespace grove::ops::cpu {

void cat(const OpCall& call, const OpOutputs& outputs);
void triangle(const OpCall& call, const OpOutputs& outputs);  // tril, triu
void one_hot(const OpCall& call, const OpOutputs& outputs);

}  // namespace grove::ops::cpu
