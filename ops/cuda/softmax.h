// CUDA kernels of the softmax family (ops/softmax.h), with the names of the CPU kernels in
// ops/cpu/softmax.h, which are their reference (tests/ops/cuda_softmax_test.cpp checks parity).
// softmax and log_softmax are in ops/cuda/softmax.cu; the losses and their gradients in
// ops/cuda/loss.cu (a bad target gives NaN, not an error: see
// Note [Out-of-range targets on the GPU] there). Each launches on the current stream of the
// output's device and does not synchronise the host. Defined only in builds with GROVE_CUDA;
// this header is plain C++.
#pragma once

#include "ops/cuda/kernel_entry.h"
#include "ops/dispatch.h"

namespace grove::ops::cuda {

void softmax(const OpCall& call, const OpOutputs& outputs);        // softmax, log_softmax
void cross_entropy(const OpCall& call, const OpOutputs& outputs);  // loss and per-row lse
void nll_loss(const OpCall& call, const OpOutputs& outputs);
void cross_entropy_backward(const OpCall& call, const OpOutputs& outputs);
void nll_loss_backward(const OpCall& call, const OpOutputs& outputs);

}  // namespace grove::ops::cuda
