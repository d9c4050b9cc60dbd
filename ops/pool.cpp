// 2-d pooling and its gradients: argument checks, output shapes and the user functions. Kernels
// are in ops/cpu/pool.cpp.
#include "ops/pool.h"

#include "ops/cpu/pool.h"
#include "ops/cuda/pool.h"
#include "ops/dispatch.h"
#include "ops/op_table.h"

namespace grove::ops {
namespace {

// Attribute ints: kernel (h, w), stride (h, w), padding (h, w).
enum PoolAttribute : std::size_t {
  kKernelH,
  kKernelW,
  kStrideH,
  kStrideW,
  kPaddingH,
  kPaddingW,
  kNumPoolAttributes
};

// The window rules both poolings and avg_pool2d_backward share, for an input of `sizes` and
// `dtype`; returns the output's sizes: `sizes` with (Ho, Wo) planes.
DimVector pooled_sizes(const OpCall& call, IntArrayRef sizes, DType dtype) {
  const DimVector& a = call.attributes.ints;
  const auto dim = static_cast<std::int64_t>(sizes.size());
  GROVE_OP_CHECK(call, dim == 3 || dim == 4,
                 "expected a 3-d (C, H, W) or 4-d (N, C, H, W) input, but got ", dim, "-d");
  GROVE_OP_CHECK(call, is_floating_point(dtype), "expected a float32 or float64 input, but got ",
                 dtype);
  GROVE_OP_CHECK(call, a[kKernelH] >= 1 && a[kKernelW] >= 1,
                 "expected a kernel size >= 1, but got (", a[kKernelH], ", ", a[kKernelW], ")");
  GROVE_OP_CHECK(call, a[kStrideH] >= 1 && a[kStrideW] >= 1, "expected strides >= 1, but got (",
                 a[kStrideH], ", ", a[kStrideW], ")");
  GROVE_OP_CHECK(call,
                 a[kPaddingH] >= 0 && a[kPaddingW] >= 0 && 2 * a[kPaddingH] <= a[kKernelH] &&
                     2 * a[kPaddingW] <= a[kKernelW],
                 "expected paddings between 0 and half the kernel (", a[kKernelH], ", ",
                 a[kKernelW], "), but got (", a[kPaddingH], ", ", a[kPaddingW], ")");
  const std::int64_t input_h = sizes[sizes.size() - 2];
  const std::int64_t input_w = sizes[sizes.size() - 1];
  GROVE_OP_CHECK(call, input_h > 0 && input_w > 0,
                 "expected a non-empty input plane, but got height ", input_h, " and width ",
                 input_w);
  const std::int64_t height = input_h + 2 * a[kPaddingH];
  const std::int64_t width = input_w + 2 * a[kPaddingW];
  GROVE_OP_CHECK(call, height >= a[kKernelH] && width >= a[kKernelW], "the kernel (", a[kKernelH],
                 ", ", a[kKernelW], ") is larger than the padded input (", height, ", ", width,
                 "), so the output would be empty");
  DimVector pooled(sizes);
  pooled[pooled.size() - 2] = (height - a[kKernelH]) / a[kStrideH] + 1;
  pooled[pooled.size() - 1] = (width - a[kKernelW]) / a[kStrideW] + 1;
  return pooled;
}

// input: (N, C, H, W) or (C, H, W) -> values (and for max_pool2d int64 indices) of the same
// rank with (Ho, Wo) planes.
void infer_pool2d(const OpCall& call, OutputSpecs& outputs) {
  const Tensor& input = call.input(0);
  GROVE_INTERNAL_ASSERT(call.attributes.ints.size() == kNumPoolAttributes,
                        "pooling takes 6 attribute ints");
  const DimVector sizes = pooled_sizes(call, input.sizes(), input.dtype());
  outputs.add(sizes, input.dtype());
  if (call.kind == OpKind::MaxPool2d) outputs.add(sizes, DType::Int64);
}

// What the backward ops check about grad and input_sizes: grad floating point, of the input's
// rank and with its leading (N, C) dims.
void check_backward(const OpCall& call, const Tensor& grad, IntArrayRef input_sizes) {
  GROVE_OP_CHECK(call, is_floating_point(grad.dtype()),
                 "expected a float32 or float64 grad, but got ", grad.dtype());
  for (const std::int64_t size : input_sizes) {
    GROVE_OP_CHECK(call, size >= 0, "expected input sizes >= 0, but got ", input_sizes);
  }
  const auto dim = static_cast<std::int64_t>(input_sizes.size());
  GROVE_OP_CHECK(call,
                 grad.dim() == dim && IntArrayRef(grad.sizes().data(), input_sizes.size() - 2) ==
                                          IntArrayRef(input_sizes.data(), input_sizes.size() - 2),
                 "expected grad of shape (", dim == 4 ? "N, C" : "C", ", Ho, Wo) with the input's ",
                 dim == 4 ? "N, C" : "C", " = ",
                 IntArrayRef(input_sizes.data(), input_sizes.size() - 2), ", but got ",
                 grad.sizes(), " for input sizes ", input_sizes);
}

// grad: (*, Ho, Wo), indices: int64 of grad's shape; ints: input_sizes (3 or 4 values).
void infer_max_pool2d_backward(const OpCall& call, OutputSpecs& outputs) {
  const Tensor& grad = call.input(0);
  const Tensor& indices = call.input(1);
  const IntArrayRef input_sizes = call.attributes.ints;
  check_backward(call, grad, input_sizes);
  GROVE_OP_CHECK(call, indices.dtype() == DType::Int64, "expected int64 indices, but got ",
                 indices.dtype());
  GROVE_OP_CHECK(call, indices.sizes() == grad.sizes(),
                 "expected indices of grad's shape (both max_pool2d_with_indices' outputs' shape) ",
                 grad.sizes(), ", but got ", indices.sizes());
  outputs.add(input_sizes, grad.dtype());
}

// grad: (*, Ho, Wo); ints: the 6 PoolAttributes, then input_sizes (3 or 4 values).
void infer_avg_pool2d_backward(const OpCall& call, OutputSpecs& outputs) {
  const Tensor& grad = call.input(0);
  const DimVector& ints = call.attributes.ints;
  const IntArrayRef input_sizes(ints.data() + kNumPoolAttributes, ints.size() - kNumPoolAttributes);
  check_backward(call, grad, input_sizes);
  const DimVector expected = pooled_sizes(call, input_sizes, grad.dtype());
  GROVE_OP_CHECK(call, grad.sizes() == IntArrayRef(expected), "expected grad of shape ",
                 IntArrayRef(expected), " (avg_pool2d's output for input sizes ", input_sizes,
                 "), but got ", grad.sizes());
  outputs.add(input_sizes, grad.dtype());
}

// Outputs: values and int64 indices.
constexpr OpEntry kMaxPool2d{OpKind::MaxPool2d, infer_pool2d, cpu::max_pool2d,
                             GROVE_CUDA_KERNEL(max_pool2d)};
constexpr OpEntry kAvgPool2d{OpKind::AvgPool2d, infer_pool2d, cpu::avg_pool2d,
                             GROVE_CUDA_KERNEL(avg_pool2d)};
// Inputs: grad, indices. ints: input_sizes.
constexpr OpEntry kMaxPool2dBackward{OpKind::MaxPool2dBackward, infer_max_pool2d_backward,
                                     cpu::max_pool2d_backward,
                                     GROVE_CUDA_KERNEL(max_pool2d_backward)};
// Inputs: grad. ints: kernel, stride, padding (as the forward), then input_sizes.
constexpr OpEntry kAvgPool2dBackward{OpKind::AvgPool2dBackward, infer_avg_pool2d_backward,
                                     cpu::avg_pool2d_backward,
                                     GROVE_CUDA_KERNEL(avg_pool2d_backward)};

// (h, w) from a list of one or two values, as PyTorch's _pair.
void append_pair(DimVector& ints, IntArrayRef values, const OpEntry& entry, const char* what) {
  GROVE_CHECK(values.size() == 1 || values.size() == 2, op_name(entry.kind), ": expected ", what,
              " as one value or two (height, width), but got ", values);
  ints.push_back(values[0]);
  ints.push_back(values[values.size() - 1]);
}

OpAttributes window_attributes(const OpEntry& entry, IntArrayRef kernel, IntArrayRef stride,
                               IntArrayRef padding) {
  OpAttributes attributes;
  append_pair(attributes.ints, kernel, entry, "the kernel size");
  append_pair(attributes.ints, stride.empty() ? kernel : stride, entry, "the stride");
  append_pair(attributes.ints, padding, entry, "the padding");
  return attributes;
}

OpOutputs pool(const OpEntry& entry, const Tensor& input, IntArrayRef kernel, IntArrayRef stride,
               IntArrayRef padding) {
  return dispatch(entry, {input}, window_attributes(entry, kernel, stride, padding));
}

void append_input_sizes(DimVector& ints, IntArrayRef input_sizes, const OpEntry& entry) {
  GROVE_CHECK(input_sizes.size() == 3 || input_sizes.size() == 4, op_name(entry.kind),
              ": expected input_sizes of 3 values (C, H, W) or 4 (N, C, H, W), but got ",
              input_sizes);
  for (const std::int64_t size : input_sizes) ints.push_back(size);
}

}  // namespace

std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, IntArrayRef kernel,
                                                  IntArrayRef stride, IntArrayRef padding) {
  OpOutputs outputs = pool(kMaxPool2d, input, kernel, stride, padding);
  return {outputs[0], outputs[1]};
}

Tensor max_pool2d(const Tensor& input, IntArrayRef kernel, IntArrayRef stride,
                  IntArrayRef padding) {
  return pool(kMaxPool2d, input, kernel, stride, padding)[0];
}

Tensor avg_pool2d(const Tensor& input, IntArrayRef kernel, IntArrayRef stride,
                  IntArrayRef padding) {
  return pool(kAvgPool2d, input, kernel, stride, padding)[0];
}

Tensor max_pool2d_backward(const Tensor& grad, const Tensor& indices, IntArrayRef input_sizes) {
  OpAttributes attributes;
  append_input_sizes(attributes.ints, input_sizes, kMaxPool2dBackward);
  return dispatch(kMaxPool2dBackward, {grad, indices}, attributes)[0];
}

Tensor avg_pool2d_backward(const Tensor& grad, IntArrayRef input_sizes, IntArrayRef kernel,
                           IntArrayRef stride, IntArrayRef padding) {
  OpAttributes attributes = window_attributes(kAvgPool2dBackward, kernel, stride, padding);
  append_input_sizes(attributes.ints, input_sizes, kAvgPool2dBackward);
  return dispatch(kAvgPool2dBackward, {grad}, attributes)[0];
}

std::span<const OpEntry> pool_entries() {
  static constexpr OpEntry kEntries[] = {kMaxPool2d, kAvgPool2d, kMaxPool2dBackward,
                                         kAvgPool2dBackward};
  return kEntries;
}

}  // namespace grove::ops
