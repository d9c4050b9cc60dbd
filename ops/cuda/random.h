// CUDA kernels of the random family (ops/random.h) and of the in-place fills uniform_ and
// normal_ (ops/inplace.h), with the names of the CPU kernels in ops/cpu/random.h and
// ops/cpu/inplace.h, which are their reference: for the same generator state they draw the same
// Philox words for the same elements (tests/ops/cuda_random_test.cpp checks parity). Counters
// are reserved on the host exactly as the CPU kernels reserve them. Kernels launch on the
// current stream of the output's device, do not synchronise the host and may be captured (see
// Note [Random numbers in captured graphs] in core/rng.h). Defined only in builds with
// GROVE_CUDA; this header is plain C++.
#pragma once

#include "ops/cuda/kernel_entry.h"
#include "ops/dispatch.h"

namespace grove::ops::cuda {

void rand(const OpCall& call, const OpOutputs& outputs);
void randn(const OpCall& call, const OpOutputs& outputs);
void randint(const OpCall& call, const OpOutputs& outputs);
void dropout(const OpCall& call, const OpOutputs& outputs);
void uniform(const OpCall& call, const OpOutputs& outputs);  // uniform_
void normal(const OpCall& call, const OpOutputs& outputs);   // normal_

}  // namespace grove::ops::cuda
