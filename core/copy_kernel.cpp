// CPU kernels for copy and fill over arbitrary strides.
//
// Both walk the destination's index space in row-major order with an odometer over the outer
// dimensions and a tight loop over the innermost one. Dimensions that are contiguous with their
// neighbour in every operand are merged first, so a dense copy is a single loop (or memcpy).
#include "core/copy_kernel.h"

#include <algorithm>
#include <cstring>

namespace grove {
namespace {

// Sizes and per-operand strides (in elements), trivially copyable so kernels can record it.
template <int kOperands>
struct StridedLoop {
  int ndim = 0;
  std::int64_t sizes[kMaxKernelDims] = {};
  std::int64_t strides[kOperands][kMaxKernelDims] = {};

  std::int64_t numel() const {
    std::int64_t n = 1;
    for (int d = 0; d < ndim; ++d) n *= sizes[d];
    return n;
  }
};

// Builds the loop, dropping size-1 dims and merging dims that are contiguous in all operands.
template <int kOperands>
StridedLoop<kOperands> make_loop(IntArrayRef sizes, const IntArrayRef (&strides)[kOperands],
                                 const char* op) {
  DimVector merged_sizes;
  DimVector merged_strides[kOperands];
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 1) continue;
    bool can_merge = !merged_sizes.empty();
    for (int k = 0; k < kOperands && can_merge; ++k) {
      can_merge = merged_strides[k].back() == strides[k][d] * sizes[d];
    }
    if (can_merge) {
      merged_sizes[merged_sizes.size() - 1] *= sizes[d];
      for (int k = 0; k < kOperands; ++k) {
        merged_strides[k][merged_strides[k].size() - 1] = strides[k][d];
      }
    } else {
      merged_sizes.push_back(sizes[d]);
      for (int k = 0; k < kOperands; ++k) merged_strides[k].push_back(strides[k][d]);
    }
  }
  GROVE_CHECK(merged_sizes.size() <= static_cast<std::size_t>(kMaxKernelDims), op,
              ": tensors with more than ", kMaxKernelDims,
              " non-mergeable dimensions are not supported (got sizes ", sizes,
              "); make the tensor contiguous or merge dimensions with view()");
  StridedLoop<kOperands> loop;
  loop.ndim = static_cast<int>(merged_sizes.size());
  for (int d = 0; d < loop.ndim; ++d) {
    loop.sizes[d] = merged_sizes[d];
    for (int k = 0; k < kOperands; ++k) loop.strides[k][d] = merged_strides[k][d];
  }
  if (loop.ndim == 0) {  // a single element
    loop.ndim = 1;
    loop.sizes[0] = 1;
  }
  return loop;
}

// Calls body(offsets...) for contiguous runs: body(offset of each operand, run length, inner
// strides). Offsets are in elements.
template <int kOperands, typename Body>
void for_each_run(const StridedLoop<kOperands>& loop, Body body) {
  const int last = loop.ndim - 1;
  std::int64_t index[kMaxKernelDims] = {};
  std::int64_t offsets[kOperands] = {};
  const std::int64_t outer = loop.numel() / std::max<std::int64_t>(loop.sizes[last], 1);
  if (loop.sizes[last] == 0) return;
  for (std::int64_t run = 0; run < outer; ++run) {
    body(offsets, loop.sizes[last]);
    // Advance the odometer over dims [0, last).
    for (int d = last - 1; d >= 0; --d) {
      ++index[d];
      for (int k = 0; k < kOperands; ++k) offsets[k] += loop.strides[k][d];
      if (index[d] < loop.sizes[d]) break;
      for (int k = 0; k < kOperands; ++k) offsets[k] -= loop.strides[k][d] * loop.sizes[d];
      index[d] = 0;
    }
  }
}

template <typename To, typename From>
To convert(From value) {
  if constexpr (std::is_same_v<To, bool>) {
    return value != From(0);
  } else {
    return static_cast<To>(value);
  }
}

void check_cpu(const Tensor& tensor, const char* op) {
  GROVE_CHECK(tensor.device().is_cpu(), op, ": tensors on ", tensor.device(),
              " need that device's backend, which this build does not have");
}

// [lowest, highest] byte addresses a tensor's elements touch.
std::pair<const char*, const char*> byte_extent(const Tensor& tensor) {
  auto* base = static_cast<const char*>(tensor.storage()->unchecked_data()) +
               tensor.storage_offset() * static_cast<std::int64_t>(element_size(tensor.dtype()));
  std::int64_t low = 0, high = 0;
  for (std::int64_t d = 0; d < tensor.dim(); ++d) {
    std::int64_t span = (tensor.sizes()[d] - 1) * tensor.strides()[d];
    (span < 0 ? low : high) += span;
  }
  const auto item = static_cast<std::int64_t>(element_size(tensor.dtype()));
  return {base + low * item, base + high * item + item - 1};
}

}  // namespace

void launch_copy(const Tensor& dst, const Tensor& src_in) {
  check_cpu(dst, "copy_");
  check_cpu(src_in, "copy_");
  GROVE_INTERNAL_ASSERT(dst.sizes() == src_in.sizes(), "launch_copy needs equal sizes");
  if (dst.numel() == 0) return;
  Tensor src = src_in;
  if (dst.storage() == src.storage()) {
    if (dst.storage_offset() == src.storage_offset() && dst.strides() == src.strides() &&
        dst.dtype() == src.dtype()) {
      return;  // copying a tensor onto itself
    }
    auto [dst_low, dst_high] = byte_extent(dst);
    auto [src_low, src_high] = byte_extent(src);
    if (dst_low <= src_high && src_low <= dst_high) src = src.clone();  // overlapping: copy once
  }
  const IntArrayRef strides[2] = {dst.strides(), src.strides()};
  const StridedLoop<2> loop = make_loop<2>(dst.sizes(), strides, "copy_");
  char* dst_data = static_cast<char*>(dst.data_ptr());
  const char* src_data = static_cast<const char*>(src.data_ptr());
  const DType dst_dtype = dst.dtype();
  const DType src_dtype = src.dtype();
  launch_cpu(current_stream(dst.device()), [=]() {
    GROVE_DISPATCH_DTYPE(dst_dtype, "copy_", [&]<typename To>() {
      GROVE_DISPATCH_DTYPE(src_dtype, "copy_", [&]<typename From>() {
        auto* out = reinterpret_cast<To*>(dst_data);
        const auto* in = reinterpret_cast<const From*>(src_data);
        for_each_run<2>(loop, [&](const std::int64_t* offsets, std::int64_t length) {
          To* o = out + offsets[0];
          const From* i = in + offsets[1];
          const std::int64_t os = loop.strides[0][loop.ndim - 1];
          const std::int64_t is = loop.strides[1][loop.ndim - 1];
          if constexpr (std::is_same_v<To, From>) {
            if (os == 1 && is == 1) {
              std::memcpy(o, i, static_cast<std::size_t>(length) * sizeof(To));
              return;
            }
          }
          for (std::int64_t j = 0; j < length; ++j) o[j * os] = convert<To>(i[j * is]);
        });
      });
    });
  });
}

void launch_fill(const Tensor& dst, const Scalar& value) {
  check_cpu(dst, "fill_");
  if (dst.numel() == 0) return;
  const IntArrayRef strides[1] = {dst.strides()};
  const StridedLoop<1> loop = make_loop<1>(dst.sizes(), strides, "fill_");
  char* dst_data = static_cast<char*>(dst.data_ptr());
  GROVE_DISPATCH_DTYPE(dst.dtype(), "fill_", [&]<typename T>() {
    const T fill_value = value.to<T>();
    launch_cpu(current_stream(dst.device()), [=]() {
      auto* out = reinterpret_cast<T*>(dst_data);
      for_each_run<1>(loop, [&](const std::int64_t* offsets, std::int64_t length) {
        T* o = out + offsets[0];
        const std::int64_t stride = loop.strides[0][loop.ndim - 1];
        if (stride == 1) {
          std::fill_n(o, length, fill_value);
        } else {
          for (std::int64_t j = 0; j < length; ++j) o[j * stride] = fill_value;
        }
      });
    });
  });
}

}  // namespace grove
