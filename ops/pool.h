// 2-d pooling: max_pool2d (with the argmax indices autograd needs) and avg_pool2d. Results are
// new contiguous tensors on the input's device; no host synchronisation.
//
// Input (N, C, H, W) or (C, H, W); output (N, C, Ho, Wo) or (C, Ho, Wo) with
//   Ho = floor((H + 2 pH - kH) / sH) + 1, and likewise Wo
// (PyTorch's defaults: dilation 1, ceil_mode false). kernel, stride and padding take two values
// (height, width) or one for both; an empty stride means stride = kernel. Padding may be at most
// half the kernel, so every window overlaps the input. Dtypes: float32 and float64.
#pragma once

#include <utility>

#include "core/tensor.h"

namespace grove::ops {

// The maximum of each window, and where it was: int64 indices y * W + x into the input plane
// (as PyTorch). Padding never wins (it counts as -infinity); on ties the first element in
// row-major window order wins; NaN wins over numbers, as in PyTorch.
std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, IntArrayRef kernel,
                                                  IntArrayRef stride = {},
                                                  IntArrayRef padding = {0, 0});
// The values of max_pool2d_with_indices only.
Tensor max_pool2d(const Tensor& input, IntArrayRef kernel, IntArrayRef stride = {},
                  IntArrayRef padding = {0, 0});

// The mean of each window, padding counted as zeros in it (count_include_pad = true, PyTorch's
// default): the divisor is always kH * kW.
Tensor avg_pool2d(const Tensor& input, IntArrayRef kernel, IntArrayRef stride = {},
                  IntArrayRef padding = {0, 0});

}  // namespace grove::ops
