#include "core/tensor_impl.h"

#include <algorithm>
#include <vector>

namespace grove {

std::int64_t product(IntArrayRef sizes) {
  std::int64_t result = 1;
  for (std::int64_t size : sizes) result *= size;
  return result;
}

void check_sizes(IntArrayRef sizes, const char* op) {
  for (std::int64_t size : sizes) {
    GROVE_CHECK(size >= 0, op, ": sizes must be non-negative, but got ", sizes);
  }
  for (std::int64_t size : sizes) {
    if (size == 0) return;  // no elements, whatever the other sizes
  }
  std::int64_t bytes = 8;  // the widest element; a tighter bound is not worth the dtype lookup
  for (std::int64_t size : sizes) {
    GROVE_CHECK(!__builtin_mul_overflow(bytes, size, &bytes), op, ": sizes ", sizes,
                " describe more elements than any device can hold");
  }
}

bool has_internal_overlap(IntArrayRef sizes, IntArrayRef strides) {
  // The common case (every in-place op and copy_ asks) without sorting or allocating.
  if (is_contiguous_layout(sizes, strides)) return false;
  // Walk the dims of size > 1 by increasing stride: each stride must step past everything the
  // smaller dims can reach, or two indices meet.
  std::vector<std::pair<std::int64_t, std::int64_t>> dims;  // (|stride|, size)
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] > 1) dims.emplace_back(strides[d] < 0 ? -strides[d] : strides[d], sizes[d]);
  }
  std::sort(dims.begin(), dims.end());
  std::int64_t reach = 0;  // the farthest offset the dims so far can reach
  for (const auto& [stride, size] : dims) {
    if (stride <= reach) return true;
    reach += (size - 1) * stride;
  }
  return false;
}

DimVector contiguous_strides(IntArrayRef sizes) {
  DimVector strides(sizes.size());
  std::int64_t stride = 1;
  for (std::size_t i = sizes.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= std::max<std::int64_t>(sizes[i], 1);
  }
  return strides;
}

bool is_contiguous_layout(IntArrayRef sizes, IntArrayRef strides) {
  std::int64_t expected = 1;
  for (std::size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] == 0) return true;
    if (sizes[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}

TensorImpl::TensorImpl(StoragePtr storage, DType dtype, IntArrayRef sizes, IntArrayRef strides,
                       std::int64_t storage_offset)
    : storage_(std::move(storage)),
      sizes_(sizes),
      strides_(strides),
      storage_offset_(storage_offset),
      numel_(product(sizes)),
      dtype_(dtype),
      is_contiguous_(is_contiguous_layout(sizes, strides)) {
  GROVE_INTERNAL_ASSERT(storage_, "a tensor needs a storage");
  GROVE_INTERNAL_ASSERT(sizes.size() == strides.size(), "sizes and strides differ in rank");
}

}  // namespace grove
