// matrix_view and matrix_layout (ops/matrix_view.h).
#include "ops/matrix_view.h"

#include <algorithm>
#include <utility>

namespace grove::ops {

void matrix_view(const Tensor& tensor, Role role, DimVector& sizes, DimVector& strides) {
  sizes = tensor.sizes();
  strides = tensor.strides();
  const std::size_t last = sizes.size() - 1;
  if (role == Role::Transposed) {
    std::swap(sizes[last], sizes[last - 1]);
    std::swap(strides[last], strides[last - 1]);
  } else if (tensor.dim() == 1 && role == Role::Left) {
    sizes.insert(0, 1);
    strides.insert(0, 0);  // the stride of a size-1 dim is never used
  } else if (tensor.dim() == 1) {
    sizes.push_back(1);
    strides.push_back(1);
  }
}

bool matrix_layout(std::int64_t rows, std::int64_t cols, std::int64_t row_stride,
                   std::int64_t col_stride, bool& row_major, std::int64_t& leading) {
  if (rows == 0 || cols == 0) {  // nothing is read
    row_major = true;
    leading = std::max<std::int64_t>(cols, 1);
    return true;
  }
  // A size-1 dim has no stride that matters; the other dim's stride must not be 0 (an expanded
  // matrix, which Eigen cannot map) and is the leading dimension.
  if (col_stride == 1 || cols == 1) {
    row_major = true;
    leading = rows == 1 ? cols : row_stride;
    if (leading >= 1) return true;
  }
  if (row_stride == 1 || rows == 1) {
    row_major = false;
    leading = cols == 1 ? rows : col_stride;
    if (leading >= 1) return true;
  }
  return false;
}

}  // namespace grove::ops
