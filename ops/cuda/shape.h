// CUDA kernels of the shape ops that copy (ops/shape.h): cat, tril/triu (one kernel, switching
// on call.kind) and one_hot, with the names of the CPU kernels in ops/cpu/shape.h, which are
// their reference (tests/ops/cuda_shape_test.cpp checks parity). Each launches on the current
// stream of the output's device and does not synchronise the host. Defined only in builds with
// GROVE_CUDA; this header is plain C++.
#pragma once

#include "ops/copy_kernels.h"
#include "ops/cuda/kernel_entry.h"
#include "ops/dispatch.h"

namespace grove::ops::cuda {

using any_device::cat;  // ops/copy_kernels.h, shared with the CPU
void triangle(const OpCall& call, const OpOutputs& outputs);  // tril, triu
void one_hot(const OpCall& call, const OpOutputs& outputs);

}  // namespace grove::ops::cuda
