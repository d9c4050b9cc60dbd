// CUDA kernels of the in-place family (ops/inplace.h), with the names of the CPU kernels in
// ops/cpu/inplace.h, which are their reference (tests/ops/cuda_elementwise_test.cpp checks
// parity). `update` serves add_, mul_, addcmul_, addcdiv_ and lerp_; fill and copy go through
// core's launch_fill / launch_copy, which reach the CUDA copy kernels (core/cuda/). uniform_ and
// normal_ have no CUDA kernel yet. Defined only in builds with GROVE_CUDA; this header is plain
// C++.
#pragma once

#include "ops/cuda/kernel_entry.h"
#include "ops/dispatch.h"

namespace grove::ops::cuda {

void update(const OpCall& call, const OpOutputs& outputs);
void fill(const OpCall& call, const OpOutputs& outputs);
void copy(const OpCall& call, const OpOutputs& outputs);

}  // namespace grove::ops::cuda
