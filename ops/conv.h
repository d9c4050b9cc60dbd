// 2-d convolution (cross-correlation, as in PyTorch): conv2d, and its gradients. Each returns a
// new contiguous tensor on the input's device; none synchronises the host, unless
// set_conv_benchmark(true) (below) is on: then the first call of each shape does, once.
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

// The gradients of conv2d, for autograd's rule. grad is the gradient of conv2d's output,
// (N, O, Ho, Wo); stride, padding, dilation and groups are the forward's. With
// output = conv2d(input, weight):
//   conv2d_backward_input:  d/d input  of sum(grad * output), of shape input_sizes (N, C, H, W);
//   conv2d_backward_weight: d/d weight of sum(grad * output), of shape weight_sizes
//                           (O, C / G, kH, kW).
// The sizes are given because several input sizes have the same output size when a stride is
// above 1 (rows and columns that no window reaches get gradient 0). The bias's gradient is
// sum(grad) over (N, Ho, Wo): ops::sum, no op of its own.
// Deterministic: images are spread over threads whole, and the weight's gradient adds the images
// in fixed chunks (independent of the thread count) in a fixed order; see
// ops/cpu/conv_backward.cpp.
Tensor conv2d_backward_input(const Tensor& grad, const Tensor& weight, IntArrayRef input_sizes,
                             IntArrayRef stride = {1, 1}, IntArrayRef padding = {0, 0},
                             IntArrayRef dilation = {1, 1}, std::int64_t groups = 1);
Tensor conv2d_backward_weight(const Tensor& grad, const Tensor& input, IntArrayRef weight_sizes,
                              IntArrayRef stride = {1, 1}, IntArrayRef padding = {0, 0},
                              IntArrayRef dilation = {1, 1}, std::int64_t groups = 1);

// Benchmark mode for CUDA convolutions (like torch.backends.cudnn.benchmark): off by default, so
// cuDNN's heuristics pick each shape's algorithm without running anything. When on, the first
// call of each shape (per direction, dtype and TF32 setting) that is not inside a capture times
// cuDNN's algorithms on that call's own buffers, which synchronises the host once, and keeps the
// fastest deterministic one that obeys the TF32 switch. A capture uses the measured plan of an
// earlier eager call of the shape (the usual warm-up), or else the heuristics' choice.
// See Note [cuDNN convolution plans] in ops/cuda/conv_plans.cpp. CPU convolutions ignore it.
// Thread-safe.
void set_conv_benchmark(bool on);
bool conv_benchmark();

}  // namespace grove::ops
