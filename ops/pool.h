// 2-d pooling: max_pool2d (with the argmax indices autograd needs) and avg_pool2d, and their
// gradients. Results are new contiguous tensors on the input's device; no host synchronisation.
// The backward ops are deterministic: each input plane is written by one thread, in order.
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

// The gradients of the two poolings, for autograd's rules: d/d input of sum(grad * output), of
// shape input_sizes (the forward input's, (N, C, H, W) or (C, H, W)) and grad's dtype. grad is
// the gradient of the pooled output.
// max_pool2d_backward: `indices` are max_pool2d_with_indices' (y * W + x in each input plane, of
// grad's shape); each grad element is added to the input element its index names, so elements
// that win several (overlapping) windows sum their gradients, and the others get 0. Indices
// outside [0, H * W) are errors, checked as in Note [Index checks during capture] (on the GPU:
// skipped and reported at the next synchronisation, Note [Device-side error reports]).
Tensor max_pool2d_backward(const Tensor& grad, const Tensor& indices, IntArrayRef input_sizes);
// avg_pool2d_backward: kernel, stride and padding are the forward's; each grad element divided
// by kH * kW (the forward's divisor, padding included) is added to every input element of its
// window.
Tensor avg_pool2d_backward(const Tensor& grad, IntArrayRef input_sizes, IntArrayRef kernel,
                           IntArrayRef stride = {}, IntArrayRef padding = {0, 0});

}  // namespace grove::ops
