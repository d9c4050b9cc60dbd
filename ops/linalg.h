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

#include <vector>

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

// The parameter gradients of linear, in one op: with grad (N, out) the gradient of linear's
// output over N rows and x (N, in) its input,
//   grad_weight (out, in) = grad^T x,   grad_bias (out) = the sum of grad's rows,
// the second only when `bias`; returns {grad_weight} or {grad_weight, grad_bias}. On CUDA the
// bias gradient comes out of the product's own epilogue (cuBLASLt's BGRADB: the column sums of
// grad are taken as the product reads it), so grad is read once; where cuBLASLt offers no such
// kernel (float64, or a shape it refuses) the sum is a separate kernel, as on the CPU.
std::vector<Tensor> linear_weight_grad(const Tensor& grad, const Tensor& x, bool bias);

}  // namespace grove::ops
