// CUDA kernels for the shape ops that copy; ops/cpu/shape.cpp is the reference they match.
//   cat: the device-agnostic kernel of ops/copy_kernels.cpp, one strided copy (core's CUDA
//     copy kernel) per input into its slice of the output; one launch per input (a single
//     launch for all inputs is not done).
//   tril/triu: one thread per output element: the element's batch offset from a StridedLoop
//     over the batch dims, its row and column from the last two; values are moved as raw bits of
//     their size (1, 4 or 8 bytes), and the dropped ones written as 0 (all bits zero is 0 in
//     every dtype).
//   one_hot: one thread per output element, out[n, c] = (c == indices[n]). An index outside
//     [0, num_classes) gives a row of zeros and is reported: see
//     Note [Out-of-range indices on the GPU] in ops/cuda/embedding.cu.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/cuda/cuda_device.h"
#include "core/cuda/device_errors.cuh"
#include "ops/attributes.h"
#include "ops/cuda/kernel_loop.cuh"
#include "ops/cuda/shape.h"

namespace grove::ops::cuda {
namespace {

// x: (*, R, C); batch: operand 0 the output, 1 the input, over the * dims.
template <typename Bits>
__global__ void triangle_elements(const Bits* x, Bits* out,
                                  const __grid_constant__ StridedLoop<2> batch, std::int64_t total,
                                  std::int64_t rows, std::int64_t columns, std::int64_t row_stride,
                                  std::int64_t column_stride, std::int64_t out_row_stride,
                                  std::int64_t out_column_stride, std::int64_t diagonal,
                                  bool lower) {
  const std::int64_t matrix = rows * columns;
  for (std::int64_t k = first_index(); k < total; k += grid_step()) {
    const std::int64_t b = k / matrix;
    const std::int64_t within = k - b * matrix;
    const std::int64_t r = within / columns;
    const std::int64_t c = within - r * columns;
    std::int64_t offsets[2];
    offsets_of<2>(batch, b, offsets);
    const bool keep = lower ? c - r <= diagonal : c - r >= diagonal;
    out[offsets[0] + r * out_row_stride + c * out_column_stride] =
        keep ? x[offsets[1] + r * row_stride + c * column_stride] : Bits(0);
  }
}

__global__ void one_hot_elements(const std::int64_t* indices,
                                 const __grid_constant__ StridedLoop<1> loop, std::int64_t count,
                                 std::int64_t classes, std::int64_t* out,
                                 const cuda_backend::DeviceErrorSite errors) {
  const std::int64_t total = count * classes;
  for (std::int64_t k = first_index(); k < total; k += grid_step()) {
    const std::int64_t i = k / classes;
    const std::int64_t c = k - i * classes;
    std::int64_t offset[1];
    offsets_of<1>(loop, i, offset);
    const std::int64_t index = indices[offset[0]];
    if (index < 0 || index >= classes) {  // See Note [Out-of-range indices on the GPU].
      if (c == 0) cuda_backend::report_bad_value(errors, index, i, classes);  // once per index
    }
    out[k] = c == index ? 1 : 0;
  }
}

template <typename Bits>
void launch_triangle(const OpCall& call, const Tensor& out) {
  const Tensor& x = call.input(0);
  const std::int64_t ndim = x.dim();
  const IntArrayRef batch_sizes(x.sizes().data(), static_cast<std::size_t>(ndim - 2));
  const IntArrayRef batch_strides[2] = {
      IntArrayRef(out.strides().data(), static_cast<std::size_t>(ndim - 2)),
      IntArrayRef(x.strides().data(), static_cast<std::size_t>(ndim - 2))};
  const StridedLoop<2> batch = make_loop<2>(batch_sizes, batch_strides, op_name(call.kind).data());
  cuda_backend::DeviceGuard guard(out.device());
  cudaStream_t stream = cuda_backend::cuda_stream(current_stream(out.device()));
  triangle_elements<Bits><<<blocks_for(x.numel()), kThreads, 0, stream>>>(
      static_cast<const Bits*>(x.data_ptr()), static_cast<Bits*>(out.data_ptr()), batch, x.numel(),
      x.sizes()[ndim - 2], x.sizes()[ndim - 1], x.strides()[ndim - 2], x.strides()[ndim - 1],
      out.strides()[ndim - 2], out.strides()[ndim - 1],
      TriangleAttributes::from(call.attributes).diagonal, call.kind == OpKind::Tril);
  GROVE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void triangle(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& out = outputs[0];
  if (out.numel() == 0) return;
  switch (element_size(out.dtype())) {
    case 1:
      return launch_triangle<std::uint8_t>(call, out);
    case 4:
      return launch_triangle<std::uint32_t>(call, out);
    case 8:
      return launch_triangle<std::uint64_t>(call, out);
    default:
      break;
  }
  GROVE_INTERNAL_ASSERT(false, op_name(call.kind), " has no CUDA kernel for dtype ", out.dtype());
}

// indices: (*) -> out: (N, C) contiguous.
void one_hot(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& indices = call.input(0);
  const std::int64_t count = indices.numel();
  const std::int64_t classes = OneHotAttributes::from(call.attributes).num_classes;
  if (count == 0 || classes == 0) return;
  const IntArrayRef strides[1] = {indices.strides()};
  const StridedLoop<1> loop = make_loop<1>(indices.sizes(), strides, "one_hot");
  cuda_backend::DeviceGuard guard(indices.device());
  cudaStream_t stream = cuda_backend::cuda_stream(current_stream(indices.device()));
  one_hot_elements<<<blocks_for(count * classes), kThreads, 0, stream>>>(
      static_cast<const std::int64_t*>(indices.data_ptr()), loop, count, classes,
      static_cast<std::int64_t*>(outputs[0].data_ptr()),
      cuda_backend::device_error_site(outputs[0].device(), "one_hot", "index",
                                      "0 <= index < {bound} (num_classes)"));
  GROVE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace grove::ops::cuda
