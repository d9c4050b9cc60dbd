// How matmul, bmm and linear read an operand as a stack of matrices, shared by the CPU kernel
// (ops/cpu/linalg.cpp) and the CUDA kernel (ops/cuda/linalg.cpp) so that both see the same
// (batch..., rows, cols) shape and the same in-place layouts.
//
// Host-side arithmetic on sizes and strides only: nothing here reads tensor data, allocates or
// launches, and nothing depends on the device.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace grove::ops {

// How an operand is read as a stack of matrices.
enum class Role {
  Left,        // a: (K) as (1, K), or (..., M, K)
  Right,       // b: (K) as (K, 1), or (..., K, N)
  Transposed,  // linear's weight (N, K), read as (K, N)
};

// The (batch..., rows, cols) sizes and strides under which `tensor` is read in `role`, without
// making a view.
void matrix_view(const Tensor& tensor, Role role, DimVector& sizes, DimVector& strides);

// Finds a BLAS-style layout for a (rows, cols) matrix with the given element strides: true, with
// row_major and the leading dimension (elements between consecutive rows if row-major, columns
// if column-major), if one dim has unit stride (size-1 dims count as unit); false if the matrix
// must be copied first (Note [Scratch copies before a CPU kernel] in ops/cpu/linalg.h).
bool matrix_layout(std::int64_t rows, std::int64_t cols, std::int64_t row_stride,
                   std::int64_t col_stride, bool& row_major, std::int64_t& leading);

}  // namespace grove::ops
