// CUDA kernels of 2-d pooling and its gradients (ops/pool.h), with the names of the CPU kernels
// in ops/cpu/pool.h, which are their reference (tests/ops/cuda_pool_test.cpp checks parity, bit
// for bit: the same comparisons, and sums in the same order and precision). Launch on the
// current stream of the output's device, never synchronise the host, and can be captured.
// Defined only in builds with GROVE_CUDA; this header is plain C++.
#pragma once

#include "ops/cuda/kernel_entry.h"
#include "ops/dispatch.h"

namespace grove::ops::cuda {

void max_pool2d(const OpCall& call, const OpOutputs& outputs);  // values and indices
void avg_pool2d(const OpCall& call, const OpOutputs& outputs);
void max_pool2d_backward(const OpCall& call, const OpOutputs& outputs);
void avg_pool2d_backward(const OpCall& call, const OpOutputs& outputs);

}  // namespace grove::ops::cuda
