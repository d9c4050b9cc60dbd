// CUDA kernels of the elementwise family (ops/elementwise.h), with the names of the CPU kernels
// in ops/cpu/elementwise.h, which are their reference (tests/ops/cuda_elementwise_test.cpp
// checks parity). Each launches on the current stream of the output's device and does not
// synchronise the host. Defined only in builds with GROVE_CUDA; this header is plain C++.
#pragma once

#include "ops/cuda/kernel_entry.h"
#include "ops/dispatch.h"

namespace grove::ops::cuda {

void binary(const OpCall& call, const OpOutputs& outputs);  // arithmetic and comparisons
void where(const OpCall& call, const OpOutputs& outputs);
void masked_fill(const OpCall& call, const OpOutputs& outputs);
void unary(const OpCall& call, const OpOutputs& outputs);          // unary math, clamp
void gelu_backward(const OpCall& call, const OpOutputs& outputs);  // inputs: grad, x
void relu_backward(const OpCall& call, const OpOutputs& outputs);  // inputs: grad, y

}  // namespace grove::ops::cuda
