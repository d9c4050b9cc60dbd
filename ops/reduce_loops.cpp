// make_reduce_loops: see ops/reduce_loops.h.
#include "ops/reduce_loops.h"

#include <algorithm>
#include <cstdlib>

#include "ops/attributes.h"

namespace grove::ops {

ReduceLoops make_reduce_loops(const OpCall& call, bool sort_inner) {
  const Tensor& x = call.input(0);
  const std::int64_t ndim = x.dim();
  const DimVector dims = ReduceAttributes::from(call.attributes).dims;
  DimVector reduced(static_cast<std::size_t>(ndim), dims.empty() ? 1 : 0);
  for (const std::int64_t dim : dims) {  // checked by infer
    if (ndim > 0) reduced[static_cast<std::size_t>(dim < 0 ? dim + ndim : dim)] = 1;
  }
  DimVector kept_sizes, kept_strides, reduced_dims;
  for (std::size_t d = 0; d < reduced.size(); ++d) {
    if (reduced[d]) {
      reduced_dims.push_back(static_cast<std::int64_t>(d));
    } else {
      kept_sizes.push_back(x.sizes()[d]);
      kept_strides.push_back(x.strides()[d]);
    }
  }
  if (sort_inner) {
    std::stable_sort(reduced_dims.begin(), reduced_dims.end(), [&](std::int64_t a, std::int64_t b) {
      return std::abs(x.strides()[a]) > std::abs(x.strides()[b]);
    });
  }
  DimVector reduced_sizes, reduced_strides;
  for (const std::int64_t d : reduced_dims) {
    reduced_sizes.push_back(x.sizes()[d]);
    reduced_strides.push_back(x.strides()[d]);
  }
  // The output is contiguous, so its strides over the kept dims are row-major.
  DimVector out_strides(kept_sizes.size(), 1);
  for (std::size_t d = kept_sizes.size(); d-- > 1;) {
    out_strides[d - 1] = out_strides[d] * std::max<std::int64_t>(kept_sizes[d], 1);
  }
  const char* name = op_name(call.kind).data();
  const IntArrayRef outer_strides[2] = {out_strides, kept_strides};
  const IntArrayRef inner_strides[1] = {reduced_strides};
  return {make_loop<2>(kept_sizes, outer_strides, name),
          make_loop<1>(reduced_sizes, inner_strides, name), product(reduced_sizes),
          product(kept_sizes)};
}

}  // namespace grove::ops
