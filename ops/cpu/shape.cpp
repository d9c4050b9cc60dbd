// CPU kernels for the shape ops that copy (cat is the device-agnostic one in
// ops/copy_kernels.cpp). tril/triu walk the batch dims with a StridedLoop and each (R, C)
// matrix with its own two strides; one_hot writes whole rows of 0s and one 1.
#include "ops/cpu/shape.h"

#include "core/strided_loop.h"
#include "ops/attributes.h"
#include "ops/cpu/embedding.h"

namespace grove::ops::cpu {

// x: (*, R, C). tril keeps [r, c] with c - r <= diagonal, triu with c - r >= diagonal.
void triangle(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& x = call.input(0);
  const Tensor& out = outputs[0];
  if (x.numel() == 0) return;
  const std::int64_t ndim = x.dim();
  const IntArrayRef batch_sizes(x.sizes().data(), static_cast<std::size_t>(ndim - 2));
  const IntArrayRef batch_strides[2] = {
      IntArrayRef(out.strides().data(), static_cast<std::size_t>(ndim - 2)),
      IntArrayRef(x.strides().data(), static_cast<std::size_t>(ndim - 2))};
  const StridedLoop<2> loop = make_loop<2>(batch_sizes, batch_strides, op_name(call.kind).data());
  const std::int64_t rows = x.sizes()[ndim - 2];
  const std::int64_t columns = x.sizes()[ndim - 1];
  const std::int64_t out_row_stride = out.strides()[ndim - 2];
  const std::int64_t out_column_stride = out.strides()[ndim - 1];
  const std::int64_t row_stride = x.strides()[ndim - 2];
  const std::int64_t column_stride = x.strides()[ndim - 1];
  const std::int64_t diagonal = TriangleAttributes::from(call.attributes).diagonal;
  const bool lower = call.kind == OpKind::Tril;
  dispatch_dtype(x.dtype(), "tril/triu", [&]<typename T>() {
    const T* in = static_cast<const T*>(x.data_ptr());
    T* o = static_cast<T*>(out.data_ptr());
    launch_cpu(current_stream(out.device()), [=] {
      const int last = loop.ndim - 1;
      for_each_run<2>(loop, [&](const std::int64_t* offset, std::int64_t n) {
        for (std::int64_t j = 0; j < n; ++j) {
          T* out_matrix = o + offset[0] + j * loop.strides[0][last];
          const T* matrix = in + offset[1] + j * loop.strides[1][last];
          for (std::int64_t r = 0; r < rows; ++r) {
            for (std::int64_t c = 0; c < columns; ++c) {
              const bool keep = lower ? c - r <= diagonal : c - r >= diagonal;
              out_matrix[r * out_row_stride + c * out_column_stride] =
                  keep ? matrix[r * row_stride + c * column_stride] : T(0);
            }
          }
        }
      });
    });
  });
}

// indices: (*) -> out: (N, C) contiguous with out[n, c] = (c == indices[n]).
void one_hot(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& indices = call.input(0);
  const std::int64_t classes = OneHotAttributes::from(call.attributes).num_classes;
  const char* range_name = "num_classes";
  check_indices_on_host(call, indices, classes, range_name);
  if (indices.numel() == 0) return;
  const IntArrayRef strides[1] = {indices.strides()};
  const StridedLoop<1> loop = make_loop<1>(indices.sizes(), strides, "one_hot");
  const IndexShape shape = index_shape(indices);
  const auto* index_data = static_cast<const std::int64_t*>(indices.data_ptr());
  auto* o = static_cast<std::int64_t*>(outputs[0].data_ptr());
  launch_cpu(current_stream(indices.device()), [=] {
    const std::int64_t index_stride = loop.strides[0][loop.ndim - 1];
    std::int64_t flat = 0;
    for_each_run<1>(loop, [&](const std::int64_t* offset, std::int64_t n) {
      for (std::int64_t j = 0; j < n; ++j, ++flat) {
        const std::int64_t index = index_data[offset[0] + j * index_stride];
        if (index < 0 || index >= classes) [[unlikely]] {
          throw_index_error(OpKind::OneHot, index, flat, shape, classes, range_name);
        }
        std::int64_t* row = o + flat * classes;
        for (std::int64_t c = 0; c < classes; ++c) row[c] = c == index ? 1 : 0;
      }
    });
  });
}

}  // namespace grove::ops::cpu
