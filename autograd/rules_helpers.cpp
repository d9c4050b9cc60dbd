// Helpers shared by the derivative rules.
#include "autograd/rules_helpers.h"

#include <algorithm>

namespace grove::autograd::rules {

Tensor zero_scalar(const Tensor& like) {
  return zeros({}, TensorOptions(like.dtype()).device(like.device()));
}

Tensor expand_reduced(const Tensor& grad, IntArrayRef sizes, IntArrayRef dims, bool keepdim) {
  const auto ndim = static_cast<std::int64_t>(sizes.size());
  // A 0-d input (reduced over dim 0 or -1, which reductions accept for it) gives a 0-d result
  // whatever keepdim says: there is no dim to put back.
  if (ndim == 0) return grad.reshape(sizes);
  Tensor result = grad;
  if (!keepdim) {
    if (dims.empty()) {
      result = grad.reshape(DimVector(sizes.size(), 1));
    } else {
      DimVector wrapped;
      for (std::int64_t d : dims) wrapped.push_back(wrap_dim(d, ndim, "reduction backward"));
      std::sort(wrapped.begin(), wrapped.end());
      for (std::int64_t d : wrapped) result = result.unsqueeze(d);
    }
  }
  return result.expand(sizes);
}

std::int64_t reduced_count(IntArrayRef sizes, IntArrayRef dims) {
  // A 0-d input has one element, whichever of dim 0 and -1 names it (it has no sizes to read).
  if (dims.empty() || sizes.empty()) return product(sizes);
  std::int64_t count = 1;
  const auto ndim = static_cast<std::int64_t>(sizes.size());
  for (std::int64_t d : dims)
    count *= sizes[static_cast<std::size_t>(wrap_dim(d, ndim, "reduction backward"))];
  return count;
}

}  // namespace grove::autograd::rules
