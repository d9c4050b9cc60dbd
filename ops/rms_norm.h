// Root-mean-square normalisation over the trailing dimensions of x (Zhang, Sennrich 2019), the
// normalisation of LLaMA-style transformers:
//   x: (*, N1, ..., Nk) with normalized_shape = (N1, ..., Nk); each row of N = N1 * ... * Nk
//   elements is scaled on its own, without centring:
//     rrms = 1 / sqrt(sum(row^2) / N + eps),  y = row * rrms * weight.
// weight has shape normalized_shape and x's dtype, or is an undefined Tensor (no scaling). x must
// be float32 or float64. eps defaults, as PyTorch's rms_norm, to the machine epsilon of x's
// dtype. Sums accumulate in double.
//
// The op has two outputs: y (x's shape) and rrms of shape (*, 1, ..., 1) (x's shape with the
// normalised dims set to 1, so it broadcasts against x), kept for the backward pass; the user
// function returns y. Rows of zero elements have rrms 1 / sqrt(eps) (the mean of no squares is
// taken as 0) and an empty y. Returns new contiguous tensors.
#pragma once

#include <optional>

#include "core/tensor.h"

namespace grove::ops {

Tensor rms_norm(const Tensor& x, IntArrayRef normalized_shape, const Tensor& weight = {},
                std::optional<double> eps = std::nullopt);

// Both outputs: y and rrms.
struct RmsNormResult {
  Tensor output;
  Tensor rrms;
};
RmsNormResult rms_norm_with_stats(const Tensor& x, IntArrayRef normalized_shape,
                                  const Tensor& weight = {},
                                  std::optional<double> eps = std::nullopt);

// The gradients of rms_norm, for autograd's rule. grad: the gradient of y (x's shape and dtype);
// rrms: rms_norm_with_stats' saved output; weight: the forward's, or an undefined Tensor (ones).
// With xhat = x rrms, gw = grad * weight, and means over each row's N elements:
//   grad_input  = rrms (gw - xhat mean(gw xhat))                 (x's shape)
//   grad_weight = sum over rows of grad xhat                     (normalized_shape)
// Both are always computed; sums in double, each by one thread in a fixed order.
struct RmsNormGrads {
  Tensor grad_input;
  Tensor grad_weight;
};
RmsNormGrads rms_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& rrms,
                               IntArrayRef normalized_shape, const Tensor& weight = {});

}  // namespace grove::ops
