// Shared pieces of the hand-written CUDA kernels (ops/cuda/*.cu): launch geometry, the host-side
// stream lookup, and the device function that turns a linear index into per-operand offsets
// over a StridedLoop (core/strided_loop.h), which the copy kernel shares
// (core/cuda/strided_offsets.cuh).
//
// A StridedLoop is trivially copyable, so kernels take it by value as a __grid_constant__
// parameter (up to kMaxKernelDims merged dims); make_loop itself runs on the host. Only .cu
// files include this header.
#pragma once

#include <cstdint>

#include "core/cuda/cuda_check.h"
#include "core/cuda/cuda_device.h"
#include "core/cuda/strided_offsets.cuh"
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

// The data of an optional tensor (a weight or a bias), or null when it is absent.
template <typename T>
const T* data_or_null(const Tensor& t) {
  return t.defined() ? static_cast<const T*>(t.data_ptr()) : nullptr;
}

// The stream kernels working on `t` are launched on: the current stream of its device.
inline cudaStream_t stream_of(const Tensor& t) {
  return cuda_backend::cuda_stream(current_stream(t.device()));
}

// See core/cuda/strided_offsets.cuh.
using cuda_backend::offsets_of;

__device__ inline std::int64_t first_index() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline std::int64_t grid_step() {
  return static_cast<std::int64_t>(gridDim.x) * blockDim.x;
}

}  // namespace grove::ops::cuda
