// CPU kernels of the softmax family (ops/softmax.h), with the names of the CUDA kernels in
// ops/cuda/softmax.h: softmax and log_softmax in ops/cpu/softmax.cpp; the losses and their
// gradients in ops/cpu/loss.cpp (as ops/cuda/loss.cu).
#pragma once

#include "ops/dispatch.h"

namespace grove::ops::cpu {

void softmax(const OpCall& call, const OpOutputs& outputs);        // softmax, log_softmax
void cross_entropy(const OpCall& call, const OpOutputs& outputs);  // loss and per-row lse
void nll_loss(const OpCall& call, const OpOutputs& outputs);
void cross_entropy_backward(const OpCall& call, const OpOutputs& outputs);
void nll_loss_backward(const OpCall& call, const OpOutputs& outputs);

// Throws if a target is neither in [0, classes) nor ignore_index; worded like GROVE_OP_CHECK
// (for the losses and their gradients, whose kernels check the targets).
void check_targets(const char* op, DType dtype, const std::int64_t* targets, std::int64_t rows,
                   std::int64_t classes, std::int64_t target_stride, std::int64_t ignore_index);

}  // namespace grove::ops::cpu
