// CPU kernels of conv2d and its backward ops (ops/conv.h), and the unfolding they share:
// conv2d is im2col + GEMM (ops/cpu/conv.cpp), conv2d_backward_input GEMM + col2im and
// conv2d_backward_weight im2col + GEMM (ops/cpu/conv_backward.cpp), one image at a time, images
// spread over threads (Note [Threads in CPU GEMM] in ops/cpu/linalg.h). float32 convolutions
// with one group go to oneDNN instead (Note [Convolutions through oneDNN] in
// ops/cpu/conv_dnnl.h); these kernels serve the rest.
#pragma once

#include <omp.h>

#include "ops/attributes.h"
#include "ops/cpu/linalg.h"
#include "ops/dispatch.h"

namespace grove::ops::cpu {

void conv2d(const OpCall& call, const OpOutputs& outputs);
void conv2d_backward_input(const OpCall& call, const OpOutputs& outputs);
void conv2d_backward_weight(const OpCall& call, const OpOutputs& outputs);

// The sizes and geometry of one convolution: input (N, C, H, W), weight (O, C/G, kH, kW), output
// (N, O, Ho, Wo). Trivially copyable, so kernels capture it.
struct ConvShape {
  std::int64_t batch = 0, channels = 0, height = 0, width = 0;
  std::int64_t out_channels = 0, kernel_h = 0, kernel_w = 0, out_h = 0, out_w = 0;
  std::int64_t stride_h = 1, stride_w = 1, padding_h = 0, padding_w = 0;
  std::int64_t dilation_h = 1, dilation_w = 1, groups = 1;

  std::int64_t group_channels() const { return channels / groups; }
  std::int64_t group_out_channels() const { return out_channels / groups; }
  std::int64_t unfolded_rows() const {
    return group_channels() * kernel_h * kernel_w;
  }  // C/G kH kW
  std::int64_t pixels() const { return out_h * out_w; }
  // A 1x1 kernel with stride 1 and no padding: the input plane (C/G, H * W) already is the
  // columns matrix, and im2col / col2im are not needed.
  bool direct() const {
    return kernel_h == 1 && kernel_w == 1 && stride_h == 1 && stride_w == 1 && padding_h == 0 &&
           padding_w == 0;
  }
};

// From the three 4-d shapes and the call's geometry (stride, padding, dilation, groups).
ConvShape make_conv_shape(IntArrayRef input, IntArrayRef weight, IntArrayRef output,
                          const Conv2dAttributes& geometry);

// How a conv kernel spreads `items` (images, or chunks of images) holding `work` multiply-adds
// over threads; see Note [Threads in CPU GEMM]. Fixed at launch, because the kernels' scratch is
// one buffer per thread.
struct ConvThreads {
  int threads = 1;             // items run on this many threads (1: the items in turn)
  bool parallel_gemm = false;  // with threads == 1: may Eigen use several threads per GEMM
};
ConvThreads conv_threads(std::int64_t work, std::int64_t items);

// Calls body(item, thread) for every item in [0, items), each item on one thread; `thread` in
// [0, threads.threads) names the caller's scratch buffer. Call it inside launch_cpu.
template <typename Body>
void for_each_item(ConvThreads threads, std::int64_t items, Body body) {
  if (threads.threads > 1) {
#pragma omp parallel for num_threads(threads.threads) schedule(static)
    for (std::int64_t item = 0; item < items; ++item) body(item, omp_get_thread_num());
  } else if (threads.parallel_gemm) {
    for (std::int64_t item = 0; item < items; ++item) body(item, 0);
  } else {
    ThreadsGuard one_thread(1);
    for (std::int64_t item = 0; item < items; ++item) body(item, 0);
  }
}

// columns (C/G kH kW, Ho Wo) from one group's input channels (C/G, H, W), contiguous:
//   columns[(c, i, j)][(y, x)] = input[c][y sH - pH + i dH][x sW - pW + j dW], 0 in the padding.
template <typename T>
void im2col(const ConvShape& shape, const T* input, T* columns);

// The adjoint of im2col: input (C/G, H, W) = 0, then every columns element is added to the input
// element im2col read it from (padding positions are dropped). Serial, in a fixed order.
template <typename T>
void col2im(const ConvShape& shape, const T* columns, T* input);

}  // namespace grove::ops::cpu
