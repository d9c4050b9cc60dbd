// CUDA kernels of the fused optimizer updates (ops/optim.h), with the names of the CPU kernels
// in ops/cpu/optim.h, their reference (tests/ops/cuda_optim_test.cpp checks parity). One
// grid-stride kernel per call over a StridedLoop of the parameter, gradient and states; the
// per-element math is shared with the CPU (ops/optim_math.h). Launches on the current stream;
// never synchronises the host. Defined only in builds with GROVE_CUDA; this header is plain C++.
#pragma once

#include "ops/cuda/kernel_entry.h"
#include "ops/dispatch.h"

namespace grove::ops::cuda {

void sgd(const OpCall& call, const OpOutputs& outputs);
void adamw(const OpCall& call, const OpOutputs& outputs);
void unscale_grads(const OpCall& call, const OpOutputs& outputs);
void update_scale(const OpCall& call, const OpOutputs& outputs);

}  // namespace grove::ops::cuda
