// CUDA kernels of the linear algebra family (ops/linalg.h) on cuBLASLt and cuBLAS, with the names
// of the CPU kernels in ops/cpu/linalg.h, which are their reference (tests/ops/
// cuda_linalg_test.cpp checks parity). float32 products follow the TF32 switch of ops/precision.h
// read at launch; float64 products are plain DGEMMs. Launches on the current stream of the
// output's device and does not synchronise the host. Defined only in builds with GROVE_CUDA;
// this header is plain C++.
#pragma once

#include "ops/cuda/kernel_entry.h"
#include "ops/dispatch.h"

namespace grove::ops::cuda {

void matmul(const OpCall& call, const OpOutputs& outputs);  // matmul and bmm
void linear(const OpCall& call, const OpOutputs& outputs);
void linear_weight_grad(const OpCall& call, const OpOutputs& outputs);

}  // namespace grove::ops::cuda
