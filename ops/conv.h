// 2-d convolution (cross-correlation, as in PyTorch): conv2d. Returns a new contiguous tensor on
// the input's device; does not synchronise the host.
//
// Dimension letters: N batch, C input channels, H x W input plane, O output channels,
// kH x kW kernel, Ho x Wo output plane, G groups.
// Dtypes: float32 or float64, one dtype for input, weight and bias.
#pragma once

#include "core/tensor.h"

namespace grove::ops {

// input (N, C, H, W), weight (O, C / G, kH, kW), bias (O) or undefined -> (N, O, Ho, Wo) with
//   Ho = floor((H + 2 pH - dH (kH - 1) - 1) / sH) + 1, and likewise Wo.
// stride, padding and dilation take two values (height, width) or one for both; padding is with
// zeros. With G groups, input channels [g C/G, (g+1) C/G) feed output channels
// [g O/G, (g+1) O/G); C and O must both be divisible by G.
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
              IntArrayRef stride = {1, 1}, IntArrayRef padding = {0, 0},
              IntArrayRef dilation = {1, 1}, std::int64_t groups = 1);

}  // namespace grove::ops
