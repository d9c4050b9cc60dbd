// CUDA kernels of the softmax family (ops/softmax.h), with the names of the CPU kernels in
// ops/cpu/softmax.h, which are their reference (tests/ops/cuda_softmax_test.cpp checks parity).
// So far softmax and log_softmax; cross_entropy, nll_loss and their backward ops have no CUDA
// kernel yet (dispatch refuses CUDA tensors for them). Launches on the current stream of the
// output's device and does not synchronise the host. Defined only in builds with GROVE_CUDA;
// this header is plain C++.
#pragma once

#include "ops/cuda/kernel_entry.h"
#include "ops/dispatch.h"

namespace grove::ops::cuda {

void softmax(const OpCall& call, const OpOutputs& outputs);  // softmax, log_softmax

}  // namespace grove::ops::cuda
