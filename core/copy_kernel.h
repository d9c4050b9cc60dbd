// The two kernels the core layer needs itself: strided copy with dtype conversion, and fill.
// Both are launched on the current stream of the destination's device (recorded while it
// captures). The op layer (ops/) brings every other kernel.
#pragma once

#include "core/strided_loop.h"
#include "core/tensor.h"

namespace grove {

// dst[i] = convert(src[i]) for every index i; src must already have dst's sizes (a broadcast
// view is fine) and must not partially overlap dst.
void launch_copy(const Tensor& dst, const Tensor& src);
// dst[i] = value for every index i.
void launch_fill(const Tensor& dst, const Scalar& value);

}  // namespace grove
