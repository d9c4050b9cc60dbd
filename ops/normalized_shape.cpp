// The normalisations' shared argument checks (ops/normalized_shape.h).
#include "ops/normalized_shape.h"

namespace grove::ops {

DimVector check_normalized_input(const OpCall& call, const Tensor& x,
                                 IntArrayRef normalized_shape) {
  GROVE_OP_CHECK(call, is_floating_point(x.dtype()), "expected a floating-point input, but got ",
                 x.dtype());
  const auto k = static_cast<std::int64_t>(normalized_shape.size());
  GROVE_OP_CHECK(call, k >= 1 && k <= x.dim(), "expected a normalized shape of 1 to ", x.dim(),
                 " dims (the input's trailing dims), but got ", normalized_shape);
  const IntArrayRef trailing(x.sizes().data() + (x.dim() - k), static_cast<std::size_t>(k));
  GROVE_OP_CHECK(call, trailing == normalized_shape, "the normalized shape ", normalized_shape,
                 " must equal the input's trailing dims, but the input has shape ", x.sizes());
  DimVector stats_sizes(x.sizes());
  for (std::int64_t d = x.dim() - k; d < x.dim(); ++d) stats_sizes[static_cast<std::size_t>(d)] = 1;
  return stats_sizes;
}

void check_norm_parameter(const OpCall& call, const Tensor& x, const Tensor& parameter,
                          IntArrayRef normalized_shape, const char* name) {
  GROVE_OP_CHECK(call, parameter.sizes() == normalized_shape, "expected ", name, " of shape ",
                 normalized_shape, " (the normalized shape), but got ", parameter.sizes());
  GROVE_OP_CHECK(call, parameter.dtype() == x.dtype(), "expected ", name, " of dtype ", x.dtype(),
                 " (the input's), but got ", parameter.dtype());
}

}  // namespace grove::ops
