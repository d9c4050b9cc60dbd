// CPU kernels for max_pool2d and avg_pool2d: for every (image, channel) plane and output pixel,
// a loop over the window clipped to the input. The input is read through its strides; outputs
// are contiguous. The backward kernels run the same loops with the data flowing the other way
// (each grad element added into the input elements it came from), over contiguous copies of grad
// and indices (Note [Scratch copies before a CPU kernel] in ops/cpu/linalg.h); each input plane
// is summed by one thread in a fixed order, so results do not depend on the thread count. Follows
// PyTorch's CPU kernels (aten/src/ATen/native/cpu/MaxPoolKernel.cpp, AvgPoolKernel.cpp) for index,
// tie, NaN and divisor rules.
#include "ops/cpu/pool.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "ops/attributes.h"
#include "ops/cpu/embedding.h"
#include "ops/pool_geometry.h"

namespace grove::ops::cpu {
namespace {

// Pooling is memory-bound and cheap per element: below this many window reads, one thread.
constexpr std::int64_t kMinParallelPoolWork = std::int64_t{1} << 16;

// What a pooling kernel captures: the window and the input's planes (ops/pool_geometry.h) and
// the data; trivially copyable (Note [CPU streams simulate CUDA capture]).
template <typename T>
struct PoolPlan : PoolGeometry {
  const T* input = nullptr;
  T* output = nullptr;              // (planes, out_h, out_w), contiguous
  std::int64_t* indices = nullptr;  // the same, max_pool2d only
  std::int64_t planes = 0;
};

template <typename T>
PoolPlan<T> make_plan(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& input = call.input(0);
  PoolPlan<T> plan{pool_geometry(call, outputs[0])};
  plan.input = static_cast<const T*>(input.data_ptr());
  plan.output = static_cast<T*>(outputs[0].data_ptr());
  if (outputs.size() == 2) plan.indices = static_cast<std::int64_t*>(outputs[1].data_ptr());
  plan.planes = (input.dim() == 4 ? input.size(0) : 1) * plan.channels;
  return plan;
}

// Calls body(plane_input, plane_index) for every plane, on several threads when it pays.
template <typename T, typename Body>
void for_each_plane(const PoolPlan<T>& plan, Body body) {
  const std::int64_t work = plan.planes * plan.out_h * plan.out_w * plan.kernel_h * plan.kernel_w;
#pragma omp parallel for if (work >= kMinParallelPoolWork) schedule(static)
  for (std::int64_t p = 0; p < plan.planes; ++p) {
    const std::int64_t n = p / plan.channels;
    const std::int64_t c = p % plan.channels;
    body(plan.input + n * plan.batch_stride + c * plan.channel_stride, p);
  }
}

// max_pool2d's most common window, 2x2 with stride 2 and no padding over rows of unit stride:
// every window lies inside the input, so one row of outputs is a loop over columns with no
// clipping, written as selects the compiler can turn into vector blends (the general loop's
// comparisons compile to branches, which random data mispredicts). The same rule as the general
// loop: the window's elements in row-major order, a larger value or a NaN replaces the best.
template <typename T>
void max_pool_2x2_row(const T* row0, const T* row1, std::int64_t out_w, std::int64_t first_index,
                      std::int64_t width, T* values, std::int64_t* indices) {
  for (std::int64_t ox = 0; ox < out_w; ++ox) {
    const T a = row0[2 * ox], b = row0[2 * ox + 1], c = row1[2 * ox], d = row1[2 * ox + 1];
    T best = a;
    std::int64_t offset = 0;  // of the best within the window: 0, 1, width or width + 1
    bool take = (b > best) | (b != b);
    best = take ? b : best;
    offset = take ? 1 : offset;
    take = (c > best) | (c != c);
    best = take ? c : best;
    offset = take ? width : offset;
    take = (d > best) | (d != d);
    best = take ? d : best;
    offset = take ? width + 1 : offset;
    values[ox] = best;
    indices[ox] = first_index + 2 * ox + offset;
  }
}

template <typename T>
void run_max_pool(const PoolPlan<T>& plan) {
  const bool two_by_two = plan.kernel_h == 2 && plan.kernel_w == 2 && plan.stride_h == 2 &&
                          plan.stride_w == 2 && plan.padding_h == 0 && plan.padding_w == 0 &&
                          plan.column_stride == 1;
  if (two_by_two) {
    for_each_plane(plan, [&](const T* input, std::int64_t p) {
      const std::int64_t out_h = plan.out_h, out_w = plan.out_w, width = plan.width;
      const std::int64_t row_stride = plan.row_stride;
      T* values = plan.output + p * out_h * out_w;
      std::int64_t* indices = plan.indices + p * out_h * out_w;
      for (std::int64_t oy = 0; oy < out_h; ++oy) {
        const T* row0 = input + 2 * oy * row_stride;
        max_pool_2x2_row(row0, row0 + row_stride, out_w, 2 * oy * width, width, values + oy * out_w,
                         indices + oy * out_w);
      }
    });
    return;
  }
  for_each_plane(plan, [&](const T* input, std::int64_t p) {
    // The plan's fields as locals: the index stores below are int64 writes that, as far as the
    // compiler knows, could change the plan's int64 fields, which it would reload every time.
    const std::int64_t out_h = plan.out_h, out_w = plan.out_w, width = plan.width;
    const std::int64_t height = plan.height, row_stride = plan.row_stride;
    const std::int64_t column_stride = plan.column_stride;
    const std::int64_t stride_h = plan.stride_h, stride_w = plan.stride_w;
    const std::int64_t padding_h = plan.padding_h, padding_w = plan.padding_w;
    const std::int64_t kernel_h = plan.kernel_h, kernel_w = plan.kernel_w;
    T* values = plan.output + p * out_h * out_w;
    std::int64_t* indices = plan.indices + p * out_h * out_w;
    for (std::int64_t oy = 0; oy < out_h; ++oy) {
      const WindowSpan rows = window_span(oy, stride_h, padding_h, kernel_h, height);
      for (std::int64_t ox = 0; ox < out_w; ++ox) {
        const WindowSpan columns = window_span(ox, stride_w, padding_w, kernel_w, width);
        T best = -std::numeric_limits<T>::infinity();
        std::int64_t best_index = rows.begin * width + columns.begin;
        for (std::int64_t y = rows.begin; y < rows.end; ++y) {
          for (std::int64_t x = columns.begin; x < columns.end; ++x) {
            const T value = input[y * row_stride + x * column_stride];
            // Strict: the first maximum wins; a NaN beats every number.
            const bool take = (value > best) | (value != value);
            best = take ? value : best;
            best_index = take ? y * width + x : best_index;
          }
        }
        values[oy * out_w + ox] = best;
        indices[oy * out_w + ox] = best_index;
      }
    }
  });
}

template <typename T>
void run_avg_pool(const PoolPlan<T>& plan) {
  for_each_plane(plan, [&](const T* input, std::int64_t p) {
    T* values = plan.output + p * plan.out_h * plan.out_w;
    for (std::int64_t oy = 0; oy < plan.out_h; ++oy) {
      // count_include_pad: the window clipped to the padded input (always kH x kW here).
      const WindowSpan rows =
          window_span(oy, plan.stride_h, plan.padding_h, plan.kernel_h, plan.height);
      for (std::int64_t ox = 0; ox < plan.out_w; ++ox) {
        const WindowSpan columns =
            window_span(ox, plan.stride_w, plan.padding_w, plan.kernel_w, plan.width);
        double sum = 0.0;  // accumulate in double, as PyTorch's acc_type on the CPU
        for (std::int64_t y = rows.begin; y < rows.end; ++y) {
          for (std::int64_t x = columns.begin; x < columns.end; ++x) {
            sum += static_cast<double>(input[y * plan.row_stride + x * plan.column_stride]);
          }
        }
        values[oy * plan.out_w + ox] =
            static_cast<T>(sum / static_cast<double>(rows.padded * columns.padded));
      }
    }
  });
}

// What a backward kernel captures: the window and planes (its strides unused) and the data;
// trivially copyable.
template <typename T>
struct PoolBackwardPlan : PoolGeometry {
  const T* grad = nullptr;                // (planes, out_h, out_w), contiguous
  const std::int64_t* indices = nullptr;  // the same, max_pool2d_backward only
  T* grad_input = nullptr;                // (planes, height, width), the output
  std::int64_t planes = 0;
  IndexShape index_shape{};  // for errors
};

template <typename T>
PoolBackwardPlan<T> make_backward_plan(const OpCall& call, const Tensor& grad,
                                       const Tensor& grad_input) {
  // max_pool2d_backward has no window: its gradient follows the indices.
  const PoolGeometry window =
      call.kind == OpKind::AvgPool2dBackward ? window_geometry(call.attributes) : PoolGeometry{};
  PoolBackwardPlan<T> plan{backward_geometry(window, grad, grad_input)};
  plan.grad = static_cast<const T*>(grad.data_ptr());
  plan.grad_input = static_cast<T*>(grad_input.data_ptr());
  plan.planes = plan.height * plan.width == 0 ? 0 : grad_input.numel() / (plan.height * plan.width);
  return plan;
}

constexpr const char* kPlaneRange = "the input plane's H * W elements";

// grad_input[p][indices[p][k]] += grad[p][k], for every plane p and k in order.
template <typename T>
void run_max_pool_backward(const PoolBackwardPlan<T>& plan) {
  const std::int64_t plane_size = plan.height * plan.width;
  const std::int64_t pooled = plan.out_h * plan.out_w;
  // Every index is checked before anything is written (an exception must not leave an OpenMP
  // region); see Note [Index checks during capture].
  for (std::int64_t k = 0; k < plan.planes * pooled; ++k) {
    const std::int64_t index = plan.indices[k];
    if (index < 0 || index >= plane_size) [[unlikely]] {
      throw_index_error(OpKind::MaxPool2dBackward, index, k, plan.index_shape, plane_size,
                        kPlaneRange);
    }
  }
#pragma omp parallel for if (plan.planes * (plane_size + pooled) >= kMinParallelPoolWork) \
    schedule(static)
  for (std::int64_t p = 0; p < plan.planes; ++p) {
    T* grad_input = plan.grad_input + p * plane_size;
    const T* grad = plan.grad + p * pooled;
    const std::int64_t* indices = plan.indices + p * pooled;
    std::fill(grad_input, grad_input + plane_size, T(0));
    for (std::int64_t k = 0; k < pooled; ++k) grad_input[indices[k]] += grad[k];
  }
}

// Every grad element, divided by the forward's divisor, is added to each input element of its
// window (windows clipped to the input exactly as in run_avg_pool).
template <typename T>
void run_avg_pool_backward(const PoolBackwardPlan<T>& plan) {
  const std::int64_t plane_size = plan.height * plan.width;
  const std::int64_t pooled = plan.out_h * plan.out_w;
  const std::int64_t work = plan.planes * pooled * plan.kernel_h * plan.kernel_w;
#pragma omp parallel for if (work >= kMinParallelPoolWork) schedule(static)
  for (std::int64_t p = 0; p < plan.planes; ++p) {
    T* grad_input = plan.grad_input + p * plane_size;
    const T* grad = plan.grad + p * pooled;
    std::fill(grad_input, grad_input + plane_size, T(0));
    for (std::int64_t oy = 0; oy < plan.out_h; ++oy) {
      const WindowSpan rows =
          window_span(oy, plan.stride_h, plan.padding_h, plan.kernel_h, plan.height);
      for (std::int64_t ox = 0; ox < plan.out_w; ++ox) {
        const WindowSpan columns =
            window_span(ox, plan.stride_w, plan.padding_w, plan.kernel_w, plan.width);
        const T share = static_cast<T>(static_cast<double>(grad[oy * plan.out_w + ox]) /
                                       static_cast<double>(rows.padded * columns.padded));
        for (std::int64_t y = rows.begin; y < rows.end; ++y) {
          for (std::int64_t x = columns.begin; x < columns.end; ++x)
            grad_input[y * plan.width + x] += share;
        }
      }
    }
  }
}

}  // namespace

void max_pool2d(const OpCall& call, const OpOutputs& outputs) {
  dispatch_floating(outputs[0].dtype(), "max_pool2d", [&]<typename T>() {
    if (outputs[0].numel() == 0) return;
    const PoolPlan<T> plan = make_plan<T>(call, outputs);
    launch_cpu(current_stream(outputs[0].device()), [plan] { run_max_pool(plan); });
  });
}

void avg_pool2d(const OpCall& call, const OpOutputs& outputs) {
  dispatch_floating(outputs[0].dtype(), "avg_pool2d", [&]<typename T>() {
    if (outputs[0].numel() == 0) return;
    const PoolPlan<T> plan = make_plan<T>(call, outputs);
    launch_cpu(current_stream(outputs[0].device()), [plan] { run_avg_pool(plan); });
  });
}

void max_pool2d_backward(const OpCall& call, const OpOutputs& outputs) {
  const std::int64_t plane_size = outputs[0].size(-2) * outputs[0].size(-1);
  check_indices_on_host(call, call.input(1), plane_size, kPlaneRange);
  dispatch_floating(outputs[0].dtype(), "max_pool2d_backward", [&]<typename T>() {
    if (outputs[0].numel() == 0) return;
    const Tensor grad = call.input(0).contiguous();
    const Tensor indices = call.input(1).contiguous();
    PoolBackwardPlan<T> plan = make_backward_plan<T>(call, grad, outputs[0]);
    plan.indices = static_cast<const std::int64_t*>(indices.data_ptr());
    plan.index_shape = index_shape(indices);
    launch_cpu(current_stream(outputs[0].device()), [plan] { run_max_pool_backward(plan); });
  });
}

void avg_pool2d_backward(const OpCall& call, const OpOutputs& outputs) {
  dispatch_floating(outputs[0].dtype(), "avg_pool2d_backward", [&]<typename T>() {
    if (outputs[0].numel() == 0) return;
    const Tensor grad = call.input(0).contiguous();
    const PoolBackwardPlan<T> plan = make_backward_plan<T>(call, grad, outputs[0]);
    launch_cpu(current_stream(outputs[0].device()), [plan] { run_avg_pool_backward(plan); });
  });
}

}  // namespace grove::ops::cpu
