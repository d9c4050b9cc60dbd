// CPU kernel for conv2d: im2col + GEMM.
//
// For image n and group g, im2col unfolds the group's input channels into a matrix
//   columns: (C/G * kH * kW, Ho * Wo),  row (c, i, j) holding input[c][y sH - pH + i dH][x sW - pW
//   + j dW]
// for every output pixel (y, x), zero where that falls into the padding; then
//   output[n][g's channels]: (O/G, Ho * Wo) = weight_g (O/G, C/G * kH * kW) @ columns (+ bias)
// is one GEMM (ops/cpu/linalg.h) writing straight into the NCHW output. A 1x1 kernel with stride
// 1 and no padding needs no unfolding: the input plane already is the columns matrix.
//
// The input and weight are made contiguous first, and the columns buffers (one per thread) are
// allocated before launch and die after it: Note [Scratch copies before a CPU kernel].
#include "ops/cpu/conv.h"

#include <omp.h>

#include <algorithm>
#include <type_traits>

#include "ops/cpu/linalg.h"

namespace grove::ops::cpu {
namespace {

// What the kernel captures: trivially copyable (Note [CPU streams simulate CUDA capture]).
template <typename T>
struct ConvPlan {
  const T* input = nullptr;   // (N, C, H, W), contiguous
  const T* weight = nullptr;  // (O, C/G * kH * kW), contiguous
  const T* bias = nullptr;    // (O) with bias_stride, or null
  std::int64_t bias_stride = 1;
  T* output = nullptr;   // (N, O, Ho * Wo), contiguous
  T* columns = nullptr;  // threads x (C/G * kH * kW, Ho * Wo); null for the direct path
  std::int64_t batch = 0, channels = 0, height = 0, width = 0;
  std::int64_t out_channels = 0, kernel_h = 0, kernel_w = 0, out_h = 0, out_w = 0;
  std::int64_t stride_h = 1, stride_w = 1, padding_h = 0, padding_w = 0;
  std::int64_t dilation_h = 1, dilation_w = 1, groups = 1;
  int threads = 1;             // images run on this many threads (1: the images in turn)
  bool parallel_gemm = false;  // with threads == 1: may Eigen use several threads per GEMM

  std::int64_t group_channels() const { return channels / groups; }
  std::int64_t unfolded_rows() const { return group_channels() * kernel_h * kernel_w; }
  std::int64_t pixels() const { return out_h * out_w; }
};

// The first output index x in [0, out) whose input index x * stride + offset is >= 0, and the
// end of those whose input index is < size: outside [begin, end) the input is padding.
void valid_range(std::int64_t offset, std::int64_t stride, std::int64_t size, std::int64_t out,
                 std::int64_t& begin, std::int64_t& end) {
  begin = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  end = size - offset <= 0 ? 0 : (size - offset + stride - 1) / stride;
  begin = std::min(begin, out);
  end = std::clamp(end, begin, out);
}

// columns (C/G * kH * kW, Ho * Wo) from one group's input channels (C/G, H, W).
template <typename T>
void im2col(const ConvPlan<T>& plan, const T* input, T* columns) {
  const std::int64_t plane = plan.height * plan.width;
  for (std::int64_t c = 0; c < plan.group_channels(); ++c) {
    for (std::int64_t i = 0; i < plan.kernel_h; ++i) {
      for (std::int64_t j = 0; j < plan.kernel_w; ++j) {
        T* row = columns + ((c * plan.kernel_h + i) * plan.kernel_w + j) * plan.pixels();
        const std::int64_t x_offset = j * plan.dilation_w - plan.padding_w;
        std::int64_t x_begin = 0, x_end = 0;
        valid_range(x_offset, plan.stride_w, plan.width, plan.out_w, x_begin, x_end);
        for (std::int64_t y = 0; y < plan.out_h; ++y) {
          T* out_row = row + y * plan.out_w;
          const std::int64_t input_y = y * plan.stride_h - plan.padding_h + i * plan.dilation_h;
          if (input_y < 0 || input_y >= plan.height) {
            std::fill(out_row, out_row + plan.out_w, T(0));
            continue;
          }
          const T* input_row = input + c * plane + input_y * plan.width;
          std::fill(out_row, out_row + x_begin, T(0));
          if (plan.stride_w == 1) {
            std::copy(input_row + x_begin + x_offset, input_row + x_end + x_offset,
                      out_row + x_begin);
          } else {
            for (std::int64_t x = x_begin; x < x_end; ++x) {
              out_row[x] = input_row[x * plan.stride_w + x_offset];
            }
          }
          std::fill(out_row + x_end, out_row + plan.out_w, T(0));
        }
      }
    }
  }
}

// All groups of image n; `columns` is this thread's buffer.
template <typename T>
void convolve_image(const ConvPlan<T>& plan, std::int64_t n, T* columns) {
  const std::int64_t group_out = plan.out_channels / plan.groups;
  const std::int64_t rows = plan.unfolded_rows();
  const std::int64_t pixels = plan.pixels();
  for (std::int64_t g = 0; g < plan.groups; ++g) {
    const T* input =
        plan.input + (n * plan.channels + g * plan.group_channels()) * plan.height * plan.width;
    const T* unfolded = input;  // the direct (1x1) path
    if (plan.columns != nullptr) {
      im2col(plan, input, columns);
      unfolded = columns;
    }
    const MatrixRef<const T> weight{plan.weight + g * group_out * rows, group_out, rows, rows,
                                    true};
    const MatrixRef<const T> patches{unfolded, rows, pixels, pixels, true};
    T* output = plan.output + (n * plan.out_channels + g * group_out) * pixels;
    const T* bias = plan.bias == nullptr ? nullptr : plan.bias + g * group_out * plan.bias_stride;
    gemm(weight, patches, output, pixels, bias, Bias{BiasMode::PerRow, plan.bias_stride});
  }
}

// See Note [Threads in CPU GEMM].
template <typename T>
void run_conv(const ConvPlan<T>& plan) {
  const std::int64_t columns_size = plan.unfolded_rows() * plan.pixels();
  if (plan.threads > 1) {
#pragma omp parallel for num_threads(plan.threads) schedule(static)
    for (std::int64_t n = 0; n < plan.batch; ++n) {
      T* columns =
          plan.columns == nullptr ? nullptr : plan.columns + omp_get_thread_num() * columns_size;
      convolve_image(plan, n, columns);
    }
  } else if (plan.parallel_gemm) {
    for (std::int64_t n = 0; n < plan.batch; ++n) convolve_image(plan, n, plan.columns);
  } else {
    ThreadsGuard one_thread(1);
    for (std::int64_t n = 0; n < plan.batch; ++n) convolve_image(plan, n, plan.columns);
  }
}

template <typename T>
void launch_conv(const OpCall& call, const Tensor& out) {
  if (out.numel() == 0) return;
  // See Note [Scratch copies before a CPU kernel]: these three die after the launch.
  const Tensor input = call.input(0).contiguous();
  const Tensor weight = call.input(1).contiguous();
  Tensor columns;
  const DimVector& ints = call.attributes.ints;
  ConvPlan<T> plan;
  plan.batch = input.size(0);
  plan.channels = input.size(1);
  plan.height = input.size(2);
  plan.width = input.size(3);
  plan.out_channels = weight.size(0);
  plan.kernel_h = weight.size(2);
  plan.kernel_w = weight.size(3);
  plan.out_h = out.size(2);
  plan.out_w = out.size(3);
  plan.stride_h = ints[0];
  plan.stride_w = ints[1];
  plan.padding_h = ints[2];
  plan.padding_w = ints[3];
  plan.dilation_h = ints[4];
  plan.dilation_w = ints[5];
  plan.groups = ints[6];
  const std::int64_t work =
      plan.batch * plan.out_channels * plan.unfolded_rows() * plan.pixels();  // multiply-adds
  const int threads = max_threads();
  const bool parallel = work >= kMinParallelWork && threads > 1;
  plan.threads = parallel && plan.batch > 1
                     ? static_cast<int>(std::min<std::int64_t>(threads, plan.batch))
                     : 1;
  plan.parallel_gemm = parallel && plan.threads == 1;
  const bool direct = plan.kernel_h == 1 && plan.kernel_w == 1 && plan.stride_h == 1 &&
                      plan.stride_w == 1 && plan.padding_h == 0 && plan.padding_w == 0;
  if (!direct) {
    columns = empty({plan.threads, plan.unfolded_rows(), plan.pixels()},
                    TensorOptions(out.dtype()).device(out.device()));
    plan.columns = static_cast<T*>(columns.data_ptr());
  }
  plan.input = static_cast<const T*>(input.data_ptr());
  plan.weight = static_cast<const T*>(weight.data_ptr());
  plan.output = static_cast<T*>(out.data_ptr());
  if (call.inputs.size() == 3) {
    plan.bias = static_cast<const T*>(call.input(2).data_ptr());
    plan.bias_stride = call.input(2).stride(0);
  }
  launch_cpu(current_stream(out.device()), [plan] { run_conv(plan); });
}

}  // namespace

void conv2d(const OpCall& call, const OpOutputs& outputs) {
  GROVE_DISPATCH_DTYPE(outputs[0].dtype(), "conv2d", [&]<typename T>() {
    if constexpr (std::is_floating_point_v<T>) launch_conv<T>(call, outputs[0]);
  });
}

}  // namespace grove::ops::cpu
