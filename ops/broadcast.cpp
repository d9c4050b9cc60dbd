#include "ops/broadcast.h"

#include <algorithm>

namespace grove::ops {

DimVector broadcast_shapes(const OpCall& call, IntArrayRef a, IntArrayRef b) {
  const std::size_t ndim = std::max(a.size(), b.size());
  DimVector result(ndim);
  for (std::size_t i = 0; i < ndim; ++i) {
    // Walk from the last dim; a missing dim counts as size 1.
    const std::int64_t size_a = i < a.size() ? a[a.size() - 1 - i] : 1;
    const std::int64_t size_b = i < b.size() ? b[b.size() - 1 - i] : 1;
    GROVE_OP_CHECK(call, size_a == size_b || size_a == 1 || size_b == 1, "shapes ", a, " and ", b,
                   " cannot be broadcast together: dimension ", -static_cast<std::int64_t>(i) - 1,
                   " has sizes ", size_a, " and ", size_b, " (each pair must be equal or 1)");
    result[ndim - 1 - i] = size_a == 1 ? size_b : size_a;
  }
  return result;
}

DimVector broadcast_strides(const Tensor& tensor, IntArrayRef sizes) {
  DimVector strides(sizes.size(), 0);
  const std::size_t leading = sizes.size() - static_cast<std::size_t>(tensor.dim());
  for (std::size_t d = 0; d < static_cast<std::size_t>(tensor.dim()); ++d) {
    strides[leading + d] = tensor.sizes()[d] == 1 ? 0 : tensor.strides()[d];
  }
  return strides;
}

}  // namespace grove::ops
