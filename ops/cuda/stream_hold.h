// A kernel that keeps a stream busy for a while, so that work queued behind it can be timed on
// the GPU alone: while it runs, the host queues the timed launches, and events around them then
// see no gaps from the host's launch overhead. Used by conv's benchmark mode
// (ops/cuda/conv_benchmark.cpp).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace grove::ops::cuda {

// Queues one single-thread kernel on `stream` that spins for about `microseconds` of GPU time.
void hold_stream(cudaStream_t stream, std::int64_t microseconds);

}  // namespace grove::ops::cuda
