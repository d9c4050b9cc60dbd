// CUDA kernels of conv2d and its two backward ops (ops/conv.h) through cuDNN, with the names of
// the CPU kernels in ops/cpu/conv.h, which are their reference (tests/ops/cuda_conv_test.cpp
// checks parity). float32 and float64; inputs of any strides are made contiguous (NCHW) first.
// Launches on the current stream of the output's device, does not synchronise the host, and can
// be captured. Defined only in builds with GROVE_CUDA; this header is plain C++.
#pragma once

#include "ops/cuda/kernel_entry.h"
#include "ops/dispatch.h"

namespace grove::ops::cuda {

void conv2d(const OpCall& call, const OpOutputs& outputs);
void conv2d_backward_input(const OpCall& call, const OpOutputs& outputs);
void conv2d_backward_weight(const OpCall& call, const OpOutputs& outputs);

}  // namespace grove::ops::cuda
