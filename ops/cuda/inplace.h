// CUDA kernels of the in-place family (ops/inplace.h), with the names of the CPU kernels in
// ops/cpu/inplace.h, which are their reference (tests/ops/cuda_elementwise_test.cpp checks
// parity). `update` serves add_, mul_, addcmul_, addcdiv_ and lerp_; fill and copy are the
// device-agnostic kernels of ops/copy_kernels.h, whose launch_fill / launch_copy reach the CUDA
// copy kernels (core/cuda/); uniform_ and normal_ are in ops/cuda/random.h. Defined only in
// builds with GROVE_CUDA; this header is plain C++.
#pragma once

#include "ops/copy_kernels.h"
#include "ops/cuda/kernel_entry.h"
#include "ops/dispatch.h"

namespace grove::ops::cuda {

void update(const OpCall& call, const OpOutputs& outputs);
using any_device::copy;  // ops/copy_kernels.h, shared with the CPU
using any_device::fill;  // ops/copy_kernels.h, shared with the CPU

}  // namespace grove::ops::cuda
