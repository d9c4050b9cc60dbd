// CUDA kernels of layer_norm and layer_norm_backward (ops/layer_norm.h), with the names of the
// CPU kernels in ops/cpu/layer_norm.h, which are their reference
// (tests/ops/cuda_layer_norm_test.cpp checks parity). Each launches on the current stream of the
// output's device and does not synchronise the host. Defined only in builds with GROVE_CUDA;
// this header is plain C++.
#pragma once

#include "ops/cuda/kernel_entry.h"
#include "ops/dispatch.h"

namespace grove::ops::cuda {

void layer_norm(const OpCall& call, const OpOutputs& outputs);  // outputs: y, mean, rstd
// outputs: grad_input, grad_weight, grad_bias
void layer_norm_backward(const OpCall& call, const OpOutputs& outputs);

}  // namespace grove::ops::cuda
