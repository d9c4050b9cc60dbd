// CUDA kernels of the reduction family (ops/reduce.h), with the names of the CPU kernels in
// ops/cpu/reduce.h, which are their reference (tests/ops/cuda_reduce_test.cpp checks parity).
// Each launches on the current stream of the output's device and does not synchronise the
// host. Defined only in builds with GROVE_CUDA; this header is plain C++.
#pragma once

#include "ops/cuda/kernel_entry.h"
#include "ops/dispatch.h"

namespace grove::ops::cuda {

void reduce_sum(const OpCall& call, const OpOutputs& outputs);  // sum, mean, var
void reduce_max(const OpCall& call, const OpOutputs& outputs);  // max (values, indices), argmax

}  // namespace grove::ops::cuda
