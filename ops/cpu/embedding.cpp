// CPU kernels for embedding: for each index, in row-major order of the index tensor, copy one
// weight row (D elements, read through the weight's strides) into the next output row; and for
// embedding_backward, the reverse: add each grad row into the output row its index names. And
// the index checks shared with one_hot; see Note [Index checks during capture] in
// ops/embedding.h.
#include "ops/cpu/embedding.h"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <type_traits>

#include "core/device_graph.h"
#include "core/stream.h"

namespace grove::ops::cpu {

IndexShape index_shape(const Tensor& indices) {
  IndexShape shape;
  if (indices.dim() > kMaxKernelDims) {
    shape.ndim = -1;  // too many dims to record: report flat positions
    return shape;
  }
  shape.ndim = static_cast<int>(indices.dim());
  for (int d = 0; d < shape.ndim; ++d)
    shape.sizes[d] = indices.sizes()[static_cast<std::size_t>(d)];
  return shape;
}

std::string index_error(std::int64_t index, std::int64_t flat, const IndexShape& shape,
                        std::int64_t limit, const char* range_name) {
  std::ostringstream out;
  out << "index " << index << " at ";
  if (shape.ndim < 0) {
    out << "flat position " << flat << " of the indices";
  } else {
    DimVector position(static_cast<std::size_t>(shape.ndim));
    for (int d = shape.ndim - 1; d >= 0; --d) {
      position[static_cast<std::size_t>(d)] = flat % shape.sizes[d];
      flat /= shape.sizes[d];
    }
    out << "position " << IntArrayRef(position) << " of the indices of shape "
        << IntArrayRef(shape.sizes, static_cast<std::size_t>(shape.ndim));
  }
  out << " is out of range for " << range_name << " (expected 0 <= index < " << limit << ")";
  return out.str();
}

void throw_index_error(OpKind kind, std::int64_t index, std::int64_t flat, const IndexShape& shape,
                       std::int64_t limit, const char* range_name) {
  GROVE_CHECK(false, op_name(kind), ": ", index_error(index, flat, shape, limit, range_name),
              "; found by the kernel, as the indices could not be read on the host when the op "
              "was called (during graph capture); see Note [Index checks during capture]");
  __builtin_unreachable();
}

bool host_reads_allowed(Device device) {
  return !is_capturing(current_stream(device)) &&
         !capture_backend_for(device).this_thread_is_capturing();
}

void check_indices_on_host(const OpCall& call, const Tensor& indices, std::int64_t limit,
                           const char* range_name) {
  if (indices.numel() == 0 || !host_reads_allowed(indices.device())) return;
  const IntArrayRef strides[1] = {indices.strides()};
  const StridedLoop<1> loop = make_loop<1>(indices.sizes(), strides, op_name(call.kind).data());
  const auto* data = static_cast<const std::int64_t*>(indices.data_ptr());
  const std::int64_t stride = loop.strides[0][loop.ndim - 1];
  std::int64_t flat = 0;
  for_each_run<1>(loop, [&](const std::int64_t* offset, std::int64_t n) {
    for (std::int64_t j = 0; j < n; ++j, ++flat) {
      const std::int64_t index = data[offset[0] + j * stride];
      GROVE_OP_CHECK(call, index >= 0 && index < limit,
                     index_error(index, flat, index_shape(indices), limit, range_name));
    }
  });
}

// weight: (V, D), indices: (*) -> out: (N, D) with N = numel(indices), contiguous.
void embedding(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& weight = call.input(0);
  const Tensor& indices = call.input(1);
  const Tensor& out = outputs[0];
  const std::int64_t rows = weight.sizes()[0];
  const char* range_name = "the weight's rows";
  check_indices_on_host(call, indices, rows, range_name);
  if (indices.numel() == 0) return;
  const std::int64_t features = weight.sizes()[1];
  const std::int64_t row_stride = weight.strides()[0];
  const std::int64_t feature_stride = weight.strides()[1];
  const IntArrayRef strides[1] = {indices.strides()};
  const StridedLoop<1> loop = make_loop<1>(indices.sizes(), strides, "embedding");
  const IndexShape shape = index_shape(indices);
  const auto* index_data = static_cast<const std::int64_t*>(indices.data_ptr());
  const std::size_t item = element_size(weight.dtype());
  dispatch_dtype(weight.dtype(), "embedding", [&]<typename T>() {
    const T* table = static_cast<const T*>(weight.data_ptr());
    T* o = static_cast<T*>(out.data_ptr());
    launch_cpu(current_stream(out.device()), [=] {
      const std::int64_t index_stride = loop.strides[0][loop.ndim - 1];
      std::int64_t flat = 0;
      for_each_run<1>(loop, [&](const std::int64_t* offset, std::int64_t n) {
        for (std::int64_t j = 0; j < n; ++j, ++flat) {
          const std::int64_t index = index_data[offset[0] + j * index_stride];
          if (index < 0 || index >= rows) [[unlikely]] {
            throw_index_error(OpKind::Embedding, index, flat, shape, rows, range_name);
          }
          const T* source = table + index * row_stride;
          T* target = o + flat * features;
          if (feature_stride == 1 && features > 0) {
            std::memcpy(target, source, static_cast<std::size_t>(features) * item);
          } else {
            for (std::int64_t f = 0; f < features; ++f) target[f] = source[f * feature_stride];
          }
        }
      });
    });
  });
}

namespace {

// embedding_backward: below this many additions, one thread.
constexpr std::int64_t kMinParallelScatter = std::int64_t{1} << 16;
// embedding_backward gives each thread blocks of this many columns (features).
constexpr std::int64_t kScatterColumns = 64;

// What embedding_backward captures: trivially copyable.
template <typename T>
struct ScatterPlan {
  const T* grad = nullptr;                // (count, features), contiguous
  const std::int64_t* indices = nullptr;  // (count), contiguous
  T* out = nullptr;                       // (rows, features)
  std::int64_t count = 0, rows = 0, features = 0;
  IndexShape shape;        // the indices' shape, for errors
  const char* range_name;  // a string literal
};

template <typename T>
void scatter_rows(const ScatterPlan<T>& plan) {
  for (std::int64_t i = 0; i < plan.count; ++i) {
    const std::int64_t index = plan.indices[i];
    if (index < 0 || index >= plan.rows) [[unlikely]] {
      throw_index_error(OpKind::EmbeddingBackward, index, i, plan.shape, plan.rows,
                        plan.range_name);
    }
  }
  std::fill(plan.out, plan.out + plan.rows * plan.features, T(0));
  const std::int64_t blocks = (plan.features + kScatterColumns - 1) / kScatterColumns;
#pragma omp parallel for schedule(static) if (plan.count * plan.features >= kMinParallelScatter)
  for (std::int64_t block = 0; block < blocks; ++block) {
    const std::int64_t begin = block * kScatterColumns;
    const std::int64_t end = std::min(plan.features, begin + kScatterColumns);
    for (std::int64_t i = 0; i < plan.count; ++i) {
      T* target = plan.out + plan.indices[i] * plan.features;
      const T* source = plan.grad + i * plan.features;
      for (std::int64_t f = begin; f < end; ++f) target[f] += source[f];
    }
  }
}

}  // namespace

// grad: (N, D) with N = numel(indices), indices: (N) -> out: (num_weights, D), both read from
// contiguous copies (Note [Scratch copies before a CPU kernel] in ops/cpu/linalg.h):
//   out = 0;  for i in 0 .. N-1 in order:  out[indices[i], :] += grad[i, :].
// Threads split the columns, never the indices: every output element is summed by one thread,
// in index order, so repeated indices cannot race and the result does not depend on the thread
// count. The indices are all checked before anything is written (an exception must not leave an
// OpenMP region).
void embedding_backward(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& out = outputs[0];
  const char* range_name = "num_weights";
  check_indices_on_host(call, call.input(1), out.size(0), range_name);
  const Tensor grad = call.input(0).contiguous();
  const Tensor indices = call.input(1).contiguous();
  dispatch_floating(out.dtype(), "embedding_backward", [&]<typename T>() {
    ScatterPlan<T> plan;
    plan.grad = static_cast<const T*>(grad.data_ptr());
    plan.indices = static_cast<const std::int64_t*>(indices.data_ptr());
    plan.out = static_cast<T*>(out.data_ptr());
    plan.count = indices.numel();
    plan.rows = out.size(0);
    plan.features = out.size(1);
    plan.shape = index_shape(indices);
    plan.range_name = range_name;
    launch_cpu(current_stream(out.device()), [plan] { scatter_rows(plan); });
  });
}

}  // namespace grove::ops::cpu
