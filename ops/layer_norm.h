// Layer normalisation over the trailing dimensions of x (Ba, Xu et al. 2016):
//   x: (*, N1, ..., Nk) with normalized_shape = (N1, ..., Nk); each row of N = N1 * ... * Nk
//   elements is normalised on its own:
//     mean = sum(row) / N,  var = sum((row - mean)^2) / N  (biased, as PyTorch),
//     rstd = 1 / sqrt(var + eps),  y = (row - mean) * rstd * weight + bias.
// weight and bias have shape normalized_shape and x's dtype; either may be an undefined Tensor
// (no scaling, no shift). x must be float32 or float64. Statistics accumulate in double.
//
// The op has three outputs: y (x's shape), and mean and rstd of shape (*, 1, ..., 1) (x's shape
// with the normalised dims set to 1, so they broadcast against x) for the backward pass; the
// user function returns y. Rows of zero elements have mean and rstd NaN (mean of nothing).
// Returns new contiguous tensors; a non-contiguous x is copied to a contiguous one first.
#pragma once

#include "core/tensor.h"

namespace grove::ops {

Tensor layer_norm(const Tensor& x, IntArrayRef normalized_shape, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5);

// All three outputs: y, mean, rstd.
struct LayerNormResult {
  Tensor output;
  Tensor mean;
  Tensor rstd;
};
LayerNormResult layer_norm_with_stats(const Tensor& x, IntArrayRef normalized_shape,
                                      const Tensor& weight = {}, const Tensor& bias = {},
                                      double eps = 1e-5);

// The gradients of layer_norm, for autograd's rule. grad: the gradient of y (x's shape and
// dtype); mean and rstd: layer_norm_with_stats' saved outputs; weight: the forward's, or an
// undefined Tensor (then it counts as ones). With xhat = (x - mean) rstd, gw = grad * weight, and
// means taken over each row's N elements:
//   grad_input  = rstd (gw - mean(gw) - xhat mean(gw xhat))                   (x's shape)
//   grad_weight = sum over rows of grad xhat,   grad_bias = sum over rows of grad
//                                                                       (normalized_shape)
// All three are always computed (the caller drops what it does not need); sums in double.
// Deterministic: each row of grad_input, and each element of grad_weight and grad_bias, is
// summed by one thread in a fixed order.
struct LayerNormGrads {
  Tensor grad_input;
  Tensor grad_weight;
  Tensor grad_bias;
};
LayerNormGrads layer_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& mean,
                                   const Tensor& rstd, IntArrayRef normalized_shape,
                                   const Tensor& weight = {});

}  // namespace grove::ops
