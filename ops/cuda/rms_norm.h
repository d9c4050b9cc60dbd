// CUDA kernels of rms_norm and rms_norm_backward (ops/rms_norm.h), with the names of the CPU
// kernels in ops/cpu/rms_norm.h, which are their reference (tests/ops/cuda_parity_test.cpp
// checks parity). Each launches on the current stream of the output's device and does not
// synchronise the host. Defined only in builds with GROVE_CUDA; this header is plain C++.
#pragma once

#include "ops/cuda/kernel_entry.h"
#include "ops/dispatch.h"

namespace grove::ops::cuda {

void rms_norm(const OpCall& call, const OpOutputs& outputs);           // outputs: y, rrms
void rms_norm_backward(const OpCall& call, const OpOutputs& outputs);  // grad_input, grad_weight

}  // namespace grove::ops::cuda
