// attention and attention_backward of bfloat16 and float16 tensors through cuDNN's fused
// attention (Note [Fused attention through cuDNN] in attention_cudnn.cpp), for the CUDA kernels
// of ops/cuda/attention.cu. Plain C++ for g++; only the CUDA backend compiles it, and only a
// build that found the cudnn-frontend headers (GROVE_HAS_CUDNN_FRONTEND) calls cuDNN.
#pragma once

#include "ops/dispatch.h"

namespace grove::ops::cuda {

// Run the call through cuDNN and return true, or return false having launched nothing: the
// caller then runs its own kernels. Same inputs and outputs as the kernels of
// ops/cuda/attention.h; the 16-bit dtypes only.
bool cudnn_attention(const OpCall& call, const OpOutputs& outputs);
bool cudnn_attention_backward(const OpCall& call, const OpOutputs& outputs);

}  // namespace grove::ops::cuda
