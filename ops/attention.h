// Scaled dot-product attention of several heads as one op, in the layout that a (B, T, 3C)
// projection gives when viewed as (B, T, 3, H, D) (flash-attention's layout):
//
//   q, k, v: (B, T, H, D)   batch, positions, heads, head width; any strides (views of one
//                           projection are read in place)
//   s[b, h, t, u] = scale * q[b, t, h, :] . k[b, u, h, :]          for keys u < T (u <= t when
//                                                                   causal)
//   p[b, h, t, :] = softmax over u of s[b, h, t, :]
//   out[b, t, h, :] = sum over u of p[b, h, t, u] v[b, u, h, :]    -> (B, T, H, D), contiguous,
//                                                                      so out.view(B, T, H * D)
//                                                                      is the merged heads
//
// That is softmax(q k^T * scale, masked) v per head, without the (B, H, T, T) scores in memory:
// one pass per query row keeps a running maximum and sum (the online softmax), so the op reads
// q, k and v and writes out, and its backward recomputes the probabilities from the saved
// log-sum-exp. Self-attention only: q, k and v have one shape and one floating dtype; the
// log-sum-exp is kept in compute_dtype (core/dtype.h): float32 for bfloat16 and float16.
// A row whose scores are all -inf (only possible with infinite inputs) has a NaN output, as
// softmax gives.
//
// Semantics are those of the composition (matmul, masked_fill with -inf, softmax, matmul) up
// to rounding: ops/cpu/attention.cpp computes that composition per (batch, head) with Eigen in
// the inputs' precision (the reference); ops/cuda/attention.cu sums in double (one warp per row;
// head width at most kCudaMaxHeadWidth there).
#pragma once

#include "core/tensor.h"

namespace grove::ops {

// The widest head the CUDA kernels take (each lane keeps D / 32 running sums).
inline constexpr std::int64_t kCudaMaxHeadWidth = 256;

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale);

// Both outputs: out, and lse (B, H, T), each row's log-sum-exp of its (masked) scaled scores,
// which the backward needs: p[b, h, t, u] = exp(s[b, h, t, u] - lse[b, h, t]).
struct AttentionResult {
  Tensor output;
  Tensor lse;
};
AttentionResult attention_with_lse(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                                   double scale);

// The gradients of attention, for autograd's rule; grad: the gradient of out (B, T, H, D). With
// dp[t, u] = grad[t] . v[u] and delta[t] = grad[t] . out[t] (per batch and head):
//   ds[t, u] = p[t, u] (dp[t, u] - delta[t])
//   grad_q[t] = scale sum_u ds[t, u] k[u],   grad_k[u] = scale sum_t ds[t, u] q[t],
//   grad_v[u] = sum_t p[t, u] grad[t]                                 -> each (B, T, H, D)
// Deterministic: each output element is summed by one thread (CPU: one thread per (batch, head)
// pair) in a fixed order.
struct AttentionGrads {
  Tensor grad_q;
  Tensor grad_k;
  Tensor grad_v;
};
AttentionGrads attention_backward(const Tensor& grad, const Tensor& q, const Tensor& k,
                                  const Tensor& v, const Tensor& out, const Tensor& lse,
                                  bool causal, double scale);

}  // namespace grove::ops
