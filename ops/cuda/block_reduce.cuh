// Warp and block reductions of the hand-written CUDA kernels (loss.cu, softmax.cu, layer_norm.cu,
// reduce.cu), and the row groups (a warp or a whole block per row) that the row-wise kernels
// share. Only .cu files include this header.
//
// Every reduction combines in a fixed order that depends only on the block size, never on
// timing, so results are deterministic (no atomics):
//   - warp_reduce: a butterfly over the 32 lanes (__shfl_xor_sync); lane i combines its partial
//     with lane i ^ step, as op(own, other), for step = 16, 8, 4, 2, 1. For a commutative op
//     (a + b == b + a bit for bit, as for + on floating point) every lane ends with the same
//     value. Lane 0's value is the same as that of a __shfl_down_sync tree, which also combines
//     op(own, lane + step).
//   - block_reduce: warp_reduce in each warp, one partial per warp in shared memory, then every
//     thread combines the partials in warp order, op(op(p0, p1), p2)...
// The whole warp (or block) must call them: they synchronise with the full mask (__syncthreads
// for blocks). Blocks are a multiple of 32 threads.
#pragma once

#include <algorithm>
#include <cstdint>

#include "ops/cuda/kernel_loop.cuh"

namespace grove::ops::cuda {

inline constexpr int kWarp = 32;
inline constexpr unsigned kFullMask = 0xffffffffu;

// The larger of a and b, NaN if either is NaN (the CPU's row_max): a NaN operand wins, the
// first of two NaNs.
template <typename T>
__device__ inline T nan_max(T a, T b) {
  if (a != a) return a;
  return b > a || b != b ? b : a;
}

// The combine operations the kernels use.
struct Sum {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a + b;
  }
};
struct NanMax {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return nan_max(a, b);
  }
};

// Combines `value` over the 32 lanes of a warp with `op`; see the top of this file for the
// order. T is any type __shfl_xor_sync takes (double, float, 32- and 64-bit integers).
template <typename T, typename Op>
__device__ inline T warp_reduce(T value, Op op) {
  for (int step = kWarp / 2; step > 0; step /= 2) {
    value = op(value, __shfl_xor_sync(kFullMask, value, step));
  }
  return value;
}

// Combines `value` over the block with `op`, returning the result to every thread. `shared`
// holds one partial per warp (blockDim.x / kWarp elements); the block synchronises on entry so
// that consecutive calls may reuse it.
template <typename T, typename Op>
__device__ inline T block_reduce(T value, T* shared, Op op) {
  value = warp_reduce(value, op);
  __syncthreads();
  if (threadIdx.x % kWarp == 0) shared[threadIdx.x / kWarp] = value;
  __syncthreads();
  T total = shared[0];
  for (int w = 1; w < static_cast<int>(blockDim.x / kWarp); ++w) total = op(total, shared[w]);
  return total;
}

// Which rows this thread's group handles, and its lane in the group, for kernels that give each
// row one warp (kWarpRows: blockDim.x / 32 rows per block) or one whole block. A group walks
// rows first, first + step, ...; its threads walk the row's elements lane, lane + width, ...
template <bool kWarpRows>
struct RowGroup {
  int lane, width;
  std::int64_t first, step;
  __device__ RowGroup() {
    const std::int64_t groups_per_block = kWarpRows ? blockDim.x / kWarp : 1;
    lane = kWarpRows ? static_cast<int>(threadIdx.x % kWarp) : static_cast<int>(threadIdx.x);
    width = kWarpRows ? kWarp : static_cast<int>(blockDim.x);
    first = blockIdx.x * groups_per_block + (kWarpRows ? threadIdx.x / kWarp : 0);
    step = gridDim.x * groups_per_block;
  }
  // Combines `value` over the group: warp_reduce, or block_reduce through `shared` (one element
  // per warp of the block; unused for warp rows). Every thread of the group gets the result.
  template <typename V, typename Op>
  __device__ V reduce(V value, V* shared, Op op) const {
    if constexpr (kWarpRows) {
      return warp_reduce(value, op);
    } else {
      return block_reduce(value, shared, op);
    }
  }
  __device__ double sum(double value, double* shared) const { return reduce(value, shared, Sum{}); }
};

// Blocks of kThreads for a row-group kernel over m rows: eight warp rows per block, or a block
// per row (capped at kMaxBlocks; the groups then walk further rows).
inline unsigned row_group_blocks(std::int64_t m, bool warp_rows) {
  const std::int64_t blocks = warp_rows ? (m + kThreads / kWarp - 1) / (kThreads / kWarp) : m;
  return static_cast<unsigned>(std::clamp<std::int64_t>(blocks, 1, kMaxBlocks));
}

}  // namespace grove::ops::cuda
