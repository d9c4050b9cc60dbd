// CPU kernels for conv2d's gradients: the forward's im2col + GEMM (ops/cpu/conv.cpp) run
// backwards. For image n and group g, with R = C/G kH kW rows and P = Ho Wo pixels,
//   columns_n,g = im2col(input_n,g) : (R, P),   output_n,g = weight_g (O/G, R) @ columns_n,g,
// the gradients of sum(grad * output) are
//   grad_input_n,g = col2im(weight_g^T (R, O/G) @ grad_n,g (O/G, P))
//   grad_weight_g  = sum over n of grad_n,g (O/G, P) @ columns_n,g^T (P, R).
// Transposes are read in place (a row-major matrix is its transpose column-major). The direct
// 1x1 path (stride 1, no padding) skips im2col and col2im, as the forward does.
//
// Determinism. grad_input: every image is computed whole by one thread, so the thread count
// does not change it, except in the one-image path where Eigen's GEMM itself uses the threads
// (its blocking, and so its rounding, depends on the thread count: the same as conv2d).
// grad_weight sums over images: the batch is cut into min(N, kWeightChunks) chunks whose bounds
// depend on N only; each chunk adds its images' products in order with serial GEMMs into its own
// buffer, and the buffers are added in chunk order. So the result does not depend on the thread
// count either, except for a batch of one image (one chunk, Eigen's threads, as above).
//
// Scratch (grad, weight and input made contiguous, the columns buffers, the chunks' partial
// sums) is allocated before launch and dies after it: Note [Scratch copies before a CPU kernel].
#include <algorithm>
#include <type_traits>

#include "ops/cpu/conv.h"
#include "ops/cpu/conv_dnnl.h"

namespace grove::ops::cpu {
namespace {

// The weight's gradient sums the batch in at most this many chunks (and so on as many threads).
constexpr std::int64_t kWeightChunks = 16;

template <typename T>
struct InputGradPlan {
  ConvShape shape;
  ConvThreads threads;
  const T* grad = nullptr;    // (N, O, P), contiguous
  const T* weight = nullptr;  // (O, R), contiguous
  T* grad_input = nullptr;    // (N, C, H, W), the output
  T* columns = nullptr;       // threads x (R, P); null for the direct path
};

template <typename T>
void input_grad_image(const InputGradPlan<T>& plan, std::int64_t n, T* columns) {
  const ConvShape& shape = plan.shape;
  const std::int64_t group_out = shape.group_out_channels();
  const std::int64_t rows = shape.unfolded_rows();
  const std::int64_t pixels = shape.pixels();
  for (std::int64_t g = 0; g < shape.groups; ++g) {
    // weight_g^T: (R, O/G), column-major with leading dimension R.
    const MatrixRef<const T> weight_t{plan.weight + g * group_out * rows, rows, group_out, rows,
                                      false};
    const MatrixRef<const T> grad{plan.grad + (n * shape.out_channels + g * group_out) * pixels,
                                  group_out, pixels, pixels, true};
    T* grad_input = plan.grad_input +
                    (n * shape.channels + g * shape.group_channels()) * shape.height * shape.width;
    if (columns == nullptr) {  // direct: P = H W, the columns are the input plane
      gemm(weight_t, grad, grad_input, pixels);
    } else {
      gemm(weight_t, grad, columns, pixels);
      col2im(shape, static_cast<const T*>(columns), grad_input);
    }
  }
}

template <typename T>
void launch_input_grad(const OpCall& call, const Tensor& out) {
  if (out.numel() == 0) return;
  const Tensor grad = call.input(0).contiguous();
  const Tensor weight = call.input(1).contiguous();
  Tensor columns;
  InputGradPlan<T> plan;
  plan.shape = make_conv_shape(out.sizes(), weight.sizes(), grad.sizes(),
                               Conv2dAttributes::from(call.attributes));
  const ConvShape& shape = plan.shape;
  if constexpr (std::is_same_v<T, float>) {  // Note [Convolutions through oneDNN]
    if (dnnl_conv::launch(dnnl_conv::Pass::BackwardInput, shape, grad.data<float>(),
                          weight.data<float>(), nullptr, out.data<float>(), out.device())) {
      return;
    }
  }
  plan.threads = conv_threads(
      shape.batch * shape.out_channels * shape.unfolded_rows() * shape.pixels(), shape.batch);
  if (!shape.direct()) {
    columns = empty({plan.threads.threads, shape.unfolded_rows(), shape.pixels()},
                    TensorOptions(out.dtype()).device(out.device()));
    plan.columns = static_cast<T*>(columns.data_ptr());
  }
  plan.grad = static_cast<const T*>(grad.data_ptr());
  plan.weight = static_cast<const T*>(weight.data_ptr());
  plan.grad_input = static_cast<T*>(out.data_ptr());
  launch_cpu(current_stream(out.device()), [plan] {
    const std::int64_t columns_size = plan.shape.unfolded_rows() * plan.shape.pixels();
    for_each_item(plan.threads, plan.shape.batch, [&](std::int64_t n, int thread) {
      input_grad_image(plan, n,
                       plan.columns == nullptr ? nullptr : plan.columns + thread * columns_size);
    });
  });
}

template <typename T>
struct WeightGradPlan {
  ConvShape shape;
  ConvThreads threads;
  std::int64_t chunks = 1;
  const T* grad = nullptr;   // (N, O, P), contiguous
  const T* input = nullptr;  // (N, C, H, W), contiguous
  T* grad_weight = nullptr;  // (O, R), the output; chunk 0 sums into it
  T* partial = nullptr;      // (chunks - 1) x (O, R): the sums of chunks 1, 2, ...
  T* columns = nullptr;      // threads x (R, P); null for the direct path
};

// Sums the products of chunk c's images, in order, into its buffer.
template <typename T>
void weight_grad_chunk(const WeightGradPlan<T>& plan, std::int64_t chunk, T* columns) {
  const ConvShape& shape = plan.shape;
  const std::int64_t group_out = shape.group_out_channels();
  const std::int64_t rows = shape.unfolded_rows();
  const std::int64_t pixels = shape.pixels();
  const std::int64_t weight_size = shape.out_channels * rows;
  T* sum = chunk == 0 ? plan.grad_weight : plan.partial + (chunk - 1) * weight_size;
  const std::int64_t begin = chunk * shape.batch / plan.chunks;
  const std::int64_t end = (chunk + 1) * shape.batch / plan.chunks;
  for (std::int64_t n = begin; n < end; ++n) {
    for (std::int64_t g = 0; g < shape.groups; ++g) {
      const T* input = plan.input + (n * shape.channels + g * shape.group_channels()) *
                                        shape.height * shape.width;
      const T* unfolded = input;  // the direct (1x1) path
      if (columns != nullptr) {
        im2col(shape, input, columns);
        unfolded = columns;
      }
      const MatrixRef<const T> grad{plan.grad + (n * shape.out_channels + g * group_out) * pixels,
                                    group_out, pixels, pixels, true};
      // columns^T: (P, R), column-major with leading dimension P.
      const MatrixRef<const T> columns_t{unfolded, pixels, rows, pixels, false};
      T* sum_g = sum + g * group_out * rows;
      if (n == begin) {
        gemm(grad, columns_t, sum_g, rows);
      } else {
        gemm_accumulate(grad, columns_t, sum_g, rows);
      }
    }
  }
}

template <typename T>
void run_weight_grad(const WeightGradPlan<T>& plan) {
  const std::int64_t weight_size = plan.shape.out_channels * plan.shape.unfolded_rows();
  if (plan.shape.batch == 0) {  // the empty sum
    std::fill(plan.grad_weight, plan.grad_weight + weight_size, T(0));
    return;
  }
  const std::int64_t columns_size = plan.shape.unfolded_rows() * plan.shape.pixels();
  for_each_item(plan.threads, plan.chunks, [&](std::int64_t chunk, int thread) {
    weight_grad_chunk(plan, chunk,
                      plan.columns == nullptr ? nullptr : plan.columns + thread * columns_size);
  });
  for (std::int64_t chunk = 1; chunk < plan.chunks; ++chunk) {
    const T* partial = plan.partial + (chunk - 1) * weight_size;
    for (std::int64_t e = 0; e < weight_size; ++e) plan.grad_weight[e] += partial[e];
  }
}

template <typename T>
void launch_weight_grad(const OpCall& call, const Tensor& out) {
  if (out.numel() == 0) return;
  const Tensor grad = call.input(0).contiguous();
  const Tensor input = call.input(1).contiguous();
  Tensor columns, partial;
  WeightGradPlan<T> plan;
  plan.shape = make_conv_shape(input.sizes(), out.sizes(), grad.sizes(),
                               Conv2dAttributes::from(call.attributes));
  const ConvShape& shape = plan.shape;
  if constexpr (std::is_same_v<T, float>) {  // Note [Convolutions through oneDNN]
    if (dnnl_conv::launch(dnnl_conv::Pass::BackwardWeight, shape, grad.data<float>(),
                          input.data<float>(), nullptr, out.data<float>(), out.device())) {
      return;
    }
  }
  plan.chunks = std::max<std::int64_t>(1, std::min(shape.batch, kWeightChunks));
  plan.threads = conv_threads(
      shape.batch * shape.out_channels * shape.unfolded_rows() * shape.pixels(), plan.chunks);
  const TensorOptions options = TensorOptions(out.dtype()).device(out.device());
  if (!shape.direct()) {
    columns = empty({plan.threads.threads, shape.unfolded_rows(), shape.pixels()}, options);
    plan.columns = static_cast<T*>(columns.data_ptr());
  }
  if (plan.chunks > 1) {
    partial = empty({plan.chunks - 1, out.numel()}, options);
    plan.partial = static_cast<T*>(partial.data_ptr());
  }
  plan.grad = static_cast<const T*>(grad.data_ptr());
  plan.input = static_cast<const T*>(input.data_ptr());
  plan.grad_weight = static_cast<T*>(out.data_ptr());
  launch_cpu(current_stream(out.device()), [plan] { run_weight_grad(plan); });
}

}  // namespace

void conv2d_backward_input(const OpCall& call, const OpOutputs& outputs) {
  dispatch_floating(outputs[0].dtype(), "conv2d_backward_input",
                    [&]<typename T>() { launch_input_grad<T>(call, outputs[0]); });
}

void conv2d_backward_weight(const OpCall& call, const OpOutputs& outputs) {
  dispatch_floating(outputs[0].dtype(), "conv2d_backward_weight",
                    [&]<typename T>() { launch_weight_grad<T>(call, outputs[0]); });
}

}  // namespace grove::ops::cpu
