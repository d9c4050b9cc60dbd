// CUDA kernels of embedding and embedding_backward (ops/embedding.h), with the names of the CPU
// kernels in ops/cpu/embedding.h, which are their reference (tests/ops/cuda_embedding_test.cpp
// checks parity). Each launches on the current stream of the output's device and does not
// synchronise the host, so indices are never checked on the host: see
// Note [Out-of-range indices on the GPU] in ops/cuda/embedding.cu. Defined only in builds with
// GROVE_CUDA; this header is plain C++.
#pragma once

#include <cstdint>

#include "ops/cuda/kernel_entry.h"
#include "ops/dispatch.h"

namespace grove::ops::cuda {

void embedding(const OpCall& call, const OpOutputs& outputs);
void embedding_backward(const OpCall& call, const OpOutputs& outputs);

// embedding_backward scans (every output row reads every index) up to this many indices, and
// sorts them above it (512 by default). For benchmarks and tests that compare the two paths on
// one shape; returns the previous limit. Not thread-safe.
std::int64_t set_embedding_scan_limit(std::int64_t limit);

}  // namespace grove::ops::cuda
