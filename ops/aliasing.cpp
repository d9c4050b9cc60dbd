// unaliased (ops/aliasing.h).
#include "ops/aliasing.h"

namespace grove::ops {
namespace {

// True if `operand` reads exactly x's element at each index (x.add_(x)), so updating in place
// is safe; false if it is stored elsewhere or overlaps x differently.
bool same_elements(const Tensor& x, const Tensor& operand) {
  if (operand.dim() != x.dim() || operand.storage_offset() != x.storage_offset()) return false;
  for (std::int64_t d = 0; d < x.dim(); ++d) {
    if (operand.sizes()[d] != x.sizes()[d]) return false;
    if (x.sizes()[d] != 1 && operand.strides()[d] != x.strides()[d]) return false;
  }
  return true;
}

}  // namespace

Tensor unaliased(const Tensor& x, const Tensor& operand) {
  if (!operand.is_alias_of(x) || same_elements(x, operand)) return operand;
  return operand.clone();
}

}  // namespace grove::ops
