// Linear algebra ops: matmul (PyTorch's semantics), linear (x W^T + b) and bmm. All return new
// contiguous tensors on the inputs' device; none of them synchronises the host.
//
// Dtypes: float32 or float64, and both operands (and the bias) of one dtype; there is no
// implicit promotion. Operands may have any strides: transposed operands are read in place,
// other layouts are copied first (Note [Scratch copies before a CPU kernel] in ops/cpu/linalg.h).
//
// Dimension letters: B batch (any number of leading dims), M rows of the result, K the inner
// (contracted) dim, N columns of the result.
#pragma once

#include "core/tensor.h"

namespace grove::ops {

// The matrix product, as torch.matmul:
//   (K) @ (K)                 -> ()            dot product
//   (M, K) @ (K, N)           -> (M, N)
//   (K) @ (..., K, N)         -> (..., N)      a 1 is prepended to a, then removed
//   (..., M, K) @ (K)         -> (..., M)      a 1 is appended to b, then removed
//   (B1..., M, K) @ (B2..., K, N) -> (broadcast(B1, B2)..., M, N)
// K = 0 gives zeros. Both operands need at least one dim.
Tensor matmul(const Tensor& a, const Tensor& b);

// x (..., in) @ weight (out, in)^T + bias (out) -> (..., out). `bias` may be undefined (none).
// The weight is read transposed in place, never copied when its rows or columns are dense.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = {});

// Batched matrix product of 3-d tensors with equal batch sizes (no broadcasting):
// (B, M, K) @ (B, K, N) -> (B, M, N).
Tensor bmm(const Tensor& a, const Tensor& b);

}  // namespace grove::ops
