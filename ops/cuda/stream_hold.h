// A kernel that keeps a stream busy for a while, so that work queued behind it can be timed on
// the GPU alone: while it runs, the host queues the timed launches, and events around them then
// see no gaps from the host's launch overhead. Used by the benchmark modes of conv
// (ops/cuda/conv_benchmark.cpp) and of matmul (ops/cuda/linalg.cpp).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/cuda/cuda_check.h"

namespace grove::ops::cuda {

// Two CUDA events for timing, destroyed with the object.
struct TimingEvents {
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  TimingEvents() {
    GROVE_CUDA_CHECK(cudaEventCreate(&start));
    if (const cudaError_t error = cudaEventCreate(&stop); error != cudaSuccess) {
      cudaEventDestroy(start);
      GROVE_CUDA_CHECK(error);
    }
  }
  ~TimingEvents() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  TimingEvents(const TimingEvents&) = delete;
  TimingEvents& operator=(const TimingEvents&) = delete;
};

// Queues one single-thread kernel on `stream` that spins for about `microseconds` of GPU time.
void hold_stream(cudaStream_t stream, std::int64_t microseconds);

}  // namespace grove::ops::cuda
