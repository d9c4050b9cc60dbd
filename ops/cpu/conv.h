// CPU kernel of conv2d (ops/conv.h): im2col + GEMM, one image at a time, images spread over
// threads (Note [Threads in CPU GEMM] in ops/cpu/linalg.h).
#pragma once

#include "ops/dispatch.h"

namespace grove::ops::cpu {

void conv2d(const OpCall& call, const OpOutputs& outputs);

}  // namespace grove::ops::cpu
