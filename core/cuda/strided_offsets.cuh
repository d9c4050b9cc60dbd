// The device function every strided CUDA kernel uses to turn a linear index into per-operand
// offsets over a StridedLoop (core/strided_loop.h): the copy kernel here and the op kernels
// (ops/cuda/kernel_loop.cuh). Only .cu files include this header.
#pragma once

#include <cstdint>

#include "core/strided_loop.h"

namespace grove::cuda_backend {

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

}  // namespace grove::cuda_backend
