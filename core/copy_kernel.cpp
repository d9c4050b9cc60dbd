// CPU kernels for copy and fill over arbitrary strides. CUDA tensors go to the CUDA backend
// (core/cuda/cuda_copy.cpp) once the device-agnostic part (overlap) is done.
//
// Both walk the destination's index space in row-major order with an odometer over the outer
// dimensions and a tight loop over the innermost one. Dimensions that are contiguous with their
// neighbour in every operand are merged first, so a dense copy is a single loop (or memcpy).
#include "core/copy_kernel.h"
#include "core/convert.h"
#include "core/cuda/cuda_backend.h"
#include "core/strided_loop.h"

#include <algorithm>
#include <cstring>

namespace grove {
namespace {

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
  GROVE_INTERNAL_ASSERT(dst.device() == src_in.device(), "launch_copy needs one device");
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
  if (dst.device().is_cuda()) return cuda_backend::launch_copy(dst, src);
  const IntArrayRef strides[2] = {dst.strides(), src.strides()};
  const StridedLoop<2> loop = make_loop<2>(dst.sizes(), strides, "copy_");
  char* dst_data = static_cast<char*>(dst.data_ptr());
  const char* src_data = static_cast<const char*>(src.data_ptr());
  const DType dst_dtype = dst.dtype();
  const DType src_dtype = src.dtype();
  launch_cpu(current_stream(dst.device()), [=]() {
    dispatch_dtype<DTypes::Stored>(dst_dtype, "copy_", [&]<typename To>() {
      dispatch_dtype<DTypes::Stored>(src_dtype, "copy_", [&]<typename From>() {
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
          for (std::int64_t j = 0; j < length; ++j) o[j * os] = convert_element<To>(i[j * is]);
        });
      });
    });
  });
}

void launch_fill(const Tensor& dst, const Scalar& value) {
  if (dst.numel() == 0) return;
  if (dst.device().is_cuda()) return cuda_backend::launch_fill(dst, value);
  const IntArrayRef strides[1] = {dst.strides()};
  const StridedLoop<1> loop = make_loop<1>(dst.sizes(), strides, "fill_");
  char* dst_data = static_cast<char*>(dst.data_ptr());
  dispatch_dtype<DTypes::Stored>(dst.dtype(), "fill_", [&]<typename T>() {
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
