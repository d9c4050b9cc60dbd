// The arithmetic of 2-d pooling windows, in one place for the output shapes (ops/pool.cpp), the
// CPU kernels (ops/cpu/pool.cpp) and the CUDA kernels (ops/cuda/pool.cu): how many windows fit
// along an axis, which input positions a window covers, and the window attributes and plane
// sizes and strides the kernels read, unpacked from the OpCall. Plain C++ with host/device
// qualifiers when nvcc compiles it; PoolGeometry is trivially copyable, for CPU captures and
// kernel arguments.
#pragma once

#include <cstdint>

#include "core/host_device.h"
#include "ops/attributes.h"
#include "ops/dispatch.h"

namespace grove::ops {

// The number of windows of `kernel` positions, `stride` apart, along an axis of `padded`
// positions (the input's extent plus twice the padding; padded >= kernel).
inline std::int64_t pooled_extent(std::int64_t padded, std::int64_t kernel, std::int64_t stride) {
  return (padded - kernel) / stride + 1;
}

// One axis of a pooling window: output position `out` covers input positions [begin, end)
// (clipped to the input) and `padded` positions of the padded input (what count_include_pad
// divides by). Index is int64, or int32 on the GPU when every offset fits.
template <typename Index>
struct WindowSpan {
  Index begin, end, padded;
};
template <typename Index>
GROVE_HOST_DEVICE inline WindowSpan<Index> window_span(Index out, Index stride, Index padding,
                                                       Index kernel, Index extent) {
  const Index start = out * stride - padding;
  const Index end = start + kernel < extent ? start + kernel : extent;
  const Index padded_end = start + kernel < extent + padding ? start + kernel : extent + padding;
  return {start > 0 ? start : Index(0), end, padded_end - start};
}

// The window attributes and plane sizes of a pooling or its gradient.
struct PoolGeometry {
  std::int64_t channels = 1, height = 0, width = 0, out_h = 0, out_w = 0;
  std::int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, padding_h = 0, padding_w = 0;
  // The forward input's strides (batch_stride 0 for a 3-d input).
  std::int64_t batch_stride = 0, channel_stride = 0, row_stride = 0, column_stride = 0;
};

// The window of Pool2dAttributes; the sizes and strides are left at their defaults.
inline PoolGeometry window_geometry(const OpAttributes& attributes) {
  const Pool2dAttributes window = Pool2dAttributes::from(attributes);
  PoolGeometry g;
  g.kernel_h = window.kernel[0];
  g.kernel_w = window.kernel[1];
  g.stride_h = window.stride[0];
  g.stride_w = window.stride[1];
  g.padding_h = window.padding[0];
  g.padding_w = window.padding[1];
  return g;
}

// max_pool2d and avg_pool2d: the window, input(0) (C, H, W) or (N, C, H, W) and `out`, the
// values (*, out_h, out_w).
inline PoolGeometry pool_geometry(const OpCall& call, const Tensor& out) {
  const Tensor& input = call.input(0);
  const bool batched = input.dim() == 4;
  PoolGeometry g = window_geometry(call.attributes);
  g.channels = input.size(-3);
  g.height = input.size(-2);
  g.width = input.size(-1);
  g.out_h = out.size(-2);
  g.out_w = out.size(-1);
  g.batch_stride = batched ? input.stride(0) : 0;
  g.channel_stride = input.stride(-3);
  g.row_stride = input.stride(-2);
  g.column_stride = input.stride(-1);
  return g;
}

// The gradients: `window` (window_geometry for avg_pool2d_backward; max_pool2d_backward has
// none) with the planes of grad (*, out_h, out_w) and grad_input (*, height, width).
inline PoolGeometry backward_geometry(PoolGeometry window, const Tensor& grad,
                                      const Tensor& grad_input) {
  window.height = grad_input.size(-2);
  window.width = grad_input.size(-1);
  window.out_h = grad.size(-2);
  window.out_w = grad.size(-1);
  return window;
}

}  // namespace grove::ops
