// Broadcasting, NumPy style: shapes are aligned from the right; each pair of sizes must be equal
// or one of them 1, and the result takes the larger.
#pragma once

#include "core/tensor.h"
#include "ops/dispatch.h"

namespace grove::ops {

// The broadcast shape of `a` and `b`; throws (naming the op and shapes) if they do not fit.
DimVector broadcast_shapes(const OpCall& call, IntArrayRef a, IntArrayRef b);
// Strides that read `tensor` as if expanded to `sizes` (0 in broadcast dims), without a view.
DimVector broadcast_strides(const Tensor& tensor, IntArrayRef sizes);

}  // namespace grove::ops
