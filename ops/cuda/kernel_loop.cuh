// Shared pieces of the hand-written CUDA kernels (ops/cuda/*.cu): launch geometry, the host-side
// stream lookup, and the device function that turns a linear index
// into per-operand offsets over a StridedLoop (core/strided_loop.h).
//
// A StridedLoop is trivially copyable, so kernels take it by value as a __grid_constant__
// parameter (up to kMaxKernelDims merged dims); make_loop itself runs on the host. Only .cu
// files include this header.
#pragma once

#include <cstdint>

#include "core/cuda/cuda_check.h"
#include "core/cuda/cuda_device.h"
#include "core/stream.h"
#include "core/strided_loop.h"
#include "core/tensor.h"
#include "ops/dispatch.h"

namespace grove::ops::cuda {

inline constexpr int kThreads = 256;
inline constexpr std::int64_t kMaxBlocks = 1 << 16;

// Blocks for a grid-stride loop over `work` items (threads past the end exit at once).
inline unsigned blocks_for(std::int64_t work) {
  const std::int64_t blocks = (work + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < kMaxBlocks ? (blocks > 0 ? blocks : 1) : kMaxBlocks);
}

// The stream kernels working on `t` are launched on: the current stream of its device.
inline cudaStream_t stream_of(const Tensor& t) {
  return cuda_backend::cuda_stream(current_stream(t.device()));
}

// offsets[k] = operand k's offset (in elements) of the element at `linear`, in row-major order
// over loop.sizes. One merged dimension (the common case after make_loop) needs no division.
// A division whose operands fit 32 bits (nearly always) is done in 32 bits: a GPU has no
// divider, and the 64-bit routine is several times longer (a masked fill over a 4-d view spent
// most of its time in it).
template <int kOperands>
__device__ inline void offsets_of(const StridedLoop<kOperands>& loop, std::int64_t linear,
                                  std::int64_t (&offsets)[kOperands]) {
  if (loop.ndim == 1) {
    for (int k = 0; k < kOperands; ++k) offsets[k] = linear * loop.strides[k][0];
    return;
  }
  for (int k = 0; k < kOperands; ++k) offsets[k] = 0;
  for (int d = loop.ndim - 1; d >= 0; --d) {
    const std::int64_t size = loop.sizes[d];
    std::int64_t index;
    if (((linear | size) >> 32) == 0) {  // both non-negative and below 2^32
      const auto narrow_linear = static_cast<std::uint32_t>(linear);
      const auto narrow_size = static_cast<std::uint32_t>(size);
      const std::uint32_t rest = narrow_linear / narrow_size;
      index = narrow_linear - rest * narrow_size;
      linear = rest;
    } else {
      index = linear % size;
      linear /= size;
    }
    for (int k = 0; k < kOperands; ++k) offsets[k] += index * loop.strides[k][d];
  }
}

__device__ inline std::int64_t first_index() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline std::int64_t grid_step() {
  return static_cast<std::int64_t>(gridDim.x) * blockDim.x;
}

}  // namespace grove::ops::cuda
