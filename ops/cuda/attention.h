// CUDA kernels of attention and attention_backward (ops/attention.h), with the names of the CPU
// kernels in ops/cpu/attention.h, which are their reference (tests/ops/cuda_parity_test.cpp
// checks parity). Each launches on the current stream of the output's device and does not
// synchronise the host. Defined only in builds with GROVE_CUDA; this header is plain C++.
#pragma once

#include "ops/cuda/kernel_entry.h"
#include "ops/dispatch.h"

namespace grove::ops::cuda {

void attention(const OpCall& call, const OpOutputs& outputs);           // outputs: out, lse
void attention_backward(const OpCall& call, const OpOutputs& outputs);  // grad_q, grad_k, grad_v

}  // namespace grove::ops::cuda
