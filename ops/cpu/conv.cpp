// CPU kernel for conv2d: im2col + GEMM; and im2col and col2im, which the backward kernels
// (ops/cpu/conv_backward.cpp) share.
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

#include <algorithm>
#include <type_traits>

#include "ops/cpu/conv_dnnl.h"
#include "ops/cpu/linalg.h"

namespace grove::ops::cpu {
namespace {

// The first output index x in [0, out) whose input index x * stride + offset is >= 0, and the
// end of those whose input index is < size: outside [begin, end) the input is padding.
void valid_range(std::int64_t offset, std::int64_t stride, std::int64_t size, std::int64_t out,
                 std::int64_t& begin, std::int64_t& end) {
  begin = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  end = size - offset <= 0 ? 0 : (size - offset + stride - 1) / stride;
  begin = std::min(begin, out);
  end = std::clamp(end, begin, out);
}

}  // namespace

ConvShape make_conv_shape(IntArrayRef input, IntArrayRef weight, IntArrayRef output,
                          const Conv2dAttributes& geometry) {
  ConvShape shape;
  shape.batch = input[0];
  shape.channels = input[1];
  shape.height = input[2];
  shape.width = input[3];
  shape.out_channels = weight[0];
  shape.kernel_h = weight[2];
  shape.kernel_w = weight[3];
  shape.out_h = output[2];
  shape.out_w = output[3];
  shape.stride_h = geometry.stride[0];
  shape.stride_w = geometry.stride[1];
  shape.padding_h = geometry.padding[0];
  shape.padding_w = geometry.padding[1];
  shape.dilation_h = geometry.dilation[0];
  shape.dilation_w = geometry.dilation[1];
  shape.groups = geometry.groups;
  return shape;
}

ConvThreads conv_threads(std::int64_t work, std::int64_t items) {
  const int threads = max_threads();
  const bool parallel = work >= kMinParallelWork && threads > 1;
  ConvThreads result;
  result.threads =
      parallel && items > 1 ? static_cast<int>(std::min<std::int64_t>(threads, items)) : 1;
  result.parallel_gemm = parallel && result.threads == 1;
  return result;
}

template <typename T>
void im2col(const ConvShape& shape, const T* input, T* columns) {
  const std::int64_t plane = shape.height * shape.width;
  for (std::int64_t c = 0; c < shape.group_channels(); ++c) {
    for (std::int64_t i = 0; i < shape.kernel_h; ++i) {
      for (std::int64_t j = 0; j < shape.kernel_w; ++j) {
        T* row = columns + ((c * shape.kernel_h + i) * shape.kernel_w + j) * shape.pixels();
        const std::int64_t x_offset = j * shape.dilation_w - shape.padding_w;
        std::int64_t x_begin = 0, x_end = 0;
        valid_range(x_offset, shape.stride_w, shape.width, shape.out_w, x_begin, x_end);
        for (std::int64_t y = 0; y < shape.out_h; ++y) {
          T* out_row = row + y * shape.out_w;
          const std::int64_t input_y = y * shape.stride_h - shape.padding_h + i * shape.dilation_h;
          if (input_y < 0 || input_y >= shape.height) {
            std::fill(out_row, out_row + shape.out_w, T(0));
            continue;
          }
          const T* input_row = input + c * plane + input_y * shape.width;
          std::fill(out_row, out_row + x_begin, T(0));
          if (shape.stride_w == 1) {
            std::copy(input_row + x_begin + x_offset, input_row + x_end + x_offset,
                      out_row + x_begin);
          } else {
            for (std::int64_t x = x_begin; x < x_end; ++x) {
              out_row[x] = input_row[x * shape.stride_w + x_offset];
            }
          }
          std::fill(out_row + x_end, out_row + shape.out_w, T(0));
        }
      }
    }
  }
}

// im2col's loops with the copy reversed into an addition; rows (c, i, j) in order, so every
// input element sums its terms in the same order each time.
template <typename T>
void col2im(const ConvShape& shape, const T* columns, T* input) {
  const std::int64_t plane = shape.height * shape.width;
  std::fill(input, input + shape.group_channels() * plane, T(0));
  for (std::int64_t c = 0; c < shape.group_channels(); ++c) {
    for (std::int64_t i = 0; i < shape.kernel_h; ++i) {
      for (std::int64_t j = 0; j < shape.kernel_w; ++j) {
        const T* row = columns + ((c * shape.kernel_h + i) * shape.kernel_w + j) * shape.pixels();
        const std::int64_t x_offset = j * shape.dilation_w - shape.padding_w;
        std::int64_t x_begin = 0, x_end = 0;
        valid_range(x_offset, shape.stride_w, shape.width, shape.out_w, x_begin, x_end);
        for (std::int64_t y = 0; y < shape.out_h; ++y) {
          const std::int64_t input_y = y * shape.stride_h - shape.padding_h + i * shape.dilation_h;
          if (input_y < 0 || input_y >= shape.height) continue;
          const T* column_row = row + y * shape.out_w;
          T* input_row = input + c * plane + input_y * shape.width;
          for (std::int64_t x = x_begin; x < x_end; ++x) {
            input_row[x * shape.stride_w + x_offset] += column_row[x];
          }
        }
      }
    }
  }
}

template void im2col<float>(const ConvShape&, const float*, float*);
template void im2col<double>(const ConvShape&, const double*, double*);
template void col2im<float>(const ConvShape&, const float*, float*);
template void col2im<double>(const ConvShape&, const double*, double*);

namespace {

// What the kernel captures: trivially copyable (Note [CPU streams simulate CUDA capture]).
template <typename T>
struct ConvPlan {
  ConvShape shape;
  ConvThreads threads;
  const T* input = nullptr;   // (N, C, H, W), contiguous
  const T* weight = nullptr;  // (O, C/G * kH * kW), contiguous
  const T* bias = nullptr;    // (O) with bias_stride, or null
  std::int64_t bias_stride = 1;
  T* output = nullptr;   // (N, O, Ho * Wo), contiguous
  T* columns = nullptr;  // threads x (C/G * kH * kW, Ho * Wo); null for the direct path
};

// All groups of image n; `columns` is this thread's buffer.
template <typename T>
void convolve_image(const ConvPlan<T>& plan, std::int64_t n, T* columns) {
  const ConvShape& shape = plan.shape;
  const std::int64_t group_out = shape.group_out_channels();
  const std::int64_t rows = shape.unfolded_rows();
  const std::int64_t pixels = shape.pixels();
  for (std::int64_t g = 0; g < shape.groups; ++g) {
    const T* input =
        plan.input + (n * shape.channels + g * shape.group_channels()) * shape.height * shape.width;
    const T* unfolded = input;  // the direct (1x1) path
    if (columns != nullptr) {
      im2col(shape, input, columns);
      unfolded = columns;
    }
    const MatrixRef<const T> weight{plan.weight + g * group_out * rows, group_out, rows, rows,
                                    true};
    const MatrixRef<const T> patches{unfolded, rows, pixels, pixels, true};
    T* output = plan.output + (n * shape.out_channels + g * group_out) * pixels;
    const T* bias = plan.bias == nullptr ? nullptr : plan.bias + g * group_out * plan.bias_stride;
    gemm(weight, patches, output, pixels, bias, Bias{BiasMode::PerRow, plan.bias_stride});
  }
}

template <typename T>
void launch_conv(const OpCall& call, const Tensor& out) {
  if (out.numel() == 0) return;
  // See Note [Scratch copies before a CPU kernel]: these three die after the launch.
  const Tensor input = call.input(0).contiguous();
  const Tensor weight = call.input(1).contiguous();
  Tensor columns;
  ConvPlan<T> plan;
  plan.shape = make_conv_shape(input.sizes(), weight.sizes(), out.sizes(),
                               Conv2dAttributes::from(call.attributes));
  const ConvShape& shape = plan.shape;
  if constexpr (std::is_same_v<T, float>) {  // Note [Convolutions through oneDNN]
    Tensor bias;
    if (call.inputs.size() == 3) bias = call.input(2).contiguous();
    if (dnnl_conv::launch(dnnl_conv::Pass::Forward, shape, input.data<float>(),
                          weight.data<float>(), bias.defined() ? bias.data<float>() : nullptr,
                          out.data<float>(), out.device())) {
      return;
    }
  }
  const std::int64_t work =
      shape.batch * shape.out_channels * shape.unfolded_rows() * shape.pixels();  // multiply-adds
  plan.threads = conv_threads(work, shape.batch);
  if (!shape.direct()) {
    columns = empty({plan.threads.threads, shape.unfolded_rows(), shape.pixels()},
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
  launch_cpu(current_stream(out.device()), [plan] {
    const std::int64_t columns_size = plan.shape.unfolded_rows() * plan.shape.pixels();
    for_each_item(plan.threads, plan.shape.batch, [&](std::int64_t n, int thread) {
      convolve_image(plan, n,
                     plan.columns == nullptr ? nullptr : plan.columns + thread * columns_size);
    });
  });
}

}  // namespace

void conv2d(const OpCall& call, const OpOutputs& outputs) {
  dispatch_floating(outputs[0].dtype(), "conv2d",
                    [&]<typename T>() { launch_conv<T>(call, outputs[0]); });
}

}  // namespace grove::ops::cpu
