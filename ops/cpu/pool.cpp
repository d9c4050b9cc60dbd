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

namespace grove::ops::cpu {
namespace {

// Pooling is memory-bound and cheap per element: below this many window reads, one thread.
constexpr std::int64_t kMinParallelPoolWork = std::int64_t{1} << 16;

// What a pooling kernel captures: trivially copyable (Note [CPU streams simulate CUDA capture]).
template <typename T>
struct PoolPlan {
  const T* input = nullptr;
  std::int64_t channels = 0, height = 0, width = 0;
  std::int64_t batch_stride = 0, channel_stride = 0, row_stride = 0, column_stride = 0;
  T* output = nullptr;              // (planes, out_h, out_w), contiguous
  std::int64_t* indices = nullptr;  // the same, max_pool2d only
  std::int64_t planes = 0, out_h = 0, out_w = 0;
  std::int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, padding_h = 0, padding_w = 0;
};

template <typename T>
PoolPlan<T> make_plan(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& input = call.input(0);
  const Pool2dAttributes window = Pool2dAttributes::from(call.attributes);
  const bool batched = input.dim() == 4;
  PoolPlan<T> plan;
  plan.input = static_cast<const T*>(input.data_ptr());
  plan.channels = input.size(-3);
  plan.height = input.size(-2);
  plan.width = input.size(-1);
  plan.batch_stride = batched ? input.stride(0) : 0;
  plan.channel_stride = input.stride(-3);
  plan.row_stride = input.stride(-2);
  plan.column_stride = input.stride(-1);
  plan.output = static_cast<T*>(outputs[0].data_ptr());
  if (outputs.size() == 2) plan.indices = static_cast<std::int64_t*>(outputs[1].data_ptr());
  plan.planes = (batched ? input.size(0) : 1) * plan.channels;
  plan.out_h = outputs[0].size(-2);
  plan.out_w = outputs[0].size(-1);
  plan.kernel_h = window.kernel[0];
  plan.kernel_w = window.kernel[1];
  plan.stride_h = window.stride[0];
  plan.stride_w = window.stride[1];
  plan.padding_h = window.padding[0];
  plan.padding_w = window.padding[1];
  return plan;
}

// One axis of a pooling window: output position `out` covers input positions [begin, end)
// (clipped to the input) and `padded` positions of the padded input (what count_include_pad
// divides by).
struct WindowSpan {
  std::int64_t begin, end, padded;
};
WindowSpan window_span(std::int64_t out, std::int64_t stride, std::int64_t padding,
                       std::int64_t kernel, std::int64_t extent) {
  const std::int64_t start = out * stride - padding;
  return {std::max<std::int64_t>(start, 0), std::min(start + kernel, extent),
          std::min(start + kernel, extent + padding) - start};
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
        max_pool_2x2_row(row0, row0 + row_stride, out_w, 2 * oy * width, width,
                         values + oy * out_w, indices + oy * out_w);
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

// What a backward kernel captures: trivially copyable.
template <typename T>
struct PoolBackwardPlan {
  const T* grad = nullptr;                // (planes, out_h, out_w), contiguous
  const std::int64_t* indices = nullptr;  // the same, max_pool2d_backward only
  T* grad_input = nullptr;                // (planes, height, width), the output
  std::int64_t planes = 0, height = 0, width = 0, out_h = 0, out_w = 0;
  std::int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, padding_h = 0, padding_w = 0;
  IndexShape index_shape;  // for errors
};

template <typename T>
PoolBackwardPlan<T> make_backward_plan(const OpCall& call, const Tensor& grad,
                                       const Tensor& grad_input) {
  PoolBackwardPlan<T> plan;
  plan.grad = static_cast<const T*>(grad.data_ptr());
  plan.grad_input = static_cast<T*>(grad_input.data_ptr());
  plan.height = grad_input.size(-2);
  plan.width = grad_input.size(-1);
  plan.planes = plan.height * plan.width == 0 ? 0 : grad_input.numel() / (plan.height * plan.width);
  plan.out_h = grad.size(-2);
  plan.out_w = grad.size(-1);
  if (call.kind == OpKind::AvgPool2dBackward) {
    const Pool2dAttributes window = Pool2dAttributes::from(call.attributes);
    plan.kernel_h = window.kernel[0];
    plan.kernel_w = window.kernel[1];
    plan.stride_h = window.stride[0];
    plan.stride_w = window.stride[1];
    plan.padding_h = window.padding[0];
    plan.padding_w = window.padding[1];
  }
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
