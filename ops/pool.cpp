// 2-d pooling and its gradients: argument checks, output shapes and the user functions. Kernels
// are in ops/cpu/pool.cpp.
#include "ops/pool.h"

#include "ops/attributes.h"
#include "ops/cpu/pool.h"
#include "ops/cuda/pool.h"
#include "ops/dispatch.h"
#include "ops/op_table.h"
#include "ops/pool_geometry.h"

namespace grove::ops {
namespace {

// The window rules both poolings and avg_pool2d_backward share, for an input of `sizes` and
// `dtype`; returns the output's sizes: `sizes` with (Ho, Wo) planes.
DimVector pooled_sizes(const OpCall& call, IntArrayRef sizes, DType dtype,
                       const Pool2dAttributes& a) {
  const auto dim = static_cast<std::int64_t>(sizes.size());
  GROVE_OP_CHECK(call, dim == 3 || dim == 4,
                 "expected a 3-d (C, H, W) or 4-d (N, C, H, W) input, but got ", dim, "-d");
  GROVE_OP_CHECK(call, is_floating_point(dtype), "expected a float32 or float64 input, but got ",
                 dtype);
  GROVE_OP_CHECK(call, a.kernel[0] >= 1 && a.kernel[1] >= 1,
                 "expected a kernel size >= 1, but got (", a.kernel[0], ", ", a.kernel[1], ")");
  GROVE_OP_CHECK(call, a.stride[0] >= 1 && a.stride[1] >= 1, "expected strides >= 1, but got (",
                 a.stride[0], ", ", a.stride[1], ")");
  GROVE_OP_CHECK(call,
                 a.padding[0] >= 0 && a.padding[1] >= 0 && a.padding[0] <= a.kernel[0] / 2 &&
                     a.padding[1] <= a.kernel[1] / 2,
                 "expected paddings between 0 and half the kernel (", a.kernel[0], ", ",
                 a.kernel[1], "), but got (", a.padding[0], ", ", a.padding[1], ")");
  const std::int64_t input_h = sizes[sizes.size() - 2];
  const std::int64_t input_w = sizes[sizes.size() - 1];
  GROVE_OP_CHECK(call, input_h > 0 && input_w > 0,
                 "expected a non-empty input plane, but got height ", input_h, " and width ",
                 input_w);
  // padding <= kernel / 2, so 2 * padding fits; the sum with the input may not.
  std::int64_t height = 0;
  std::int64_t width = 0;
  GROVE_OP_CHECK(call,
                 !__builtin_add_overflow(input_h, 2 * a.padding[0], &height) &&
                     !__builtin_add_overflow(input_w, 2 * a.padding[1], &width),
                 "the padding (", a.padding[0], ", ", a.padding[1],
                 ") is too large: the padded input has more elements than an int64 can count");
  GROVE_OP_CHECK(call, height >= a.kernel[0] && width >= a.kernel[1], "the kernel (", a.kernel[0],
                 ", ", a.kernel[1], ") is larger than the padded input (", height, ", ", width,
                 "), so the output would be empty");
  DimVector pooled(sizes);
  pooled[pooled.size() - 2] = pooled_extent(height, a.kernel[0], a.stride[0]);
  pooled[pooled.size() - 1] = pooled_extent(width, a.kernel[1], a.stride[1]);
  return pooled;
}

// input: (N, C, H, W) or (C, H, W) -> values (and for max_pool2d int64 indices) of the same
// rank with (Ho, Wo) planes.
void infer_pool2d(const OpCall& call, OutputSpecs& outputs) {
  const Tensor& input = call.input(0);
  const Pool2dAttributes a = Pool2dAttributes::from(call.attributes);
  GROVE_INTERNAL_ASSERT(a.input_sizes.empty(), "pooling takes no input sizes");
  const DimVector sizes = pooled_sizes(call, input.sizes(), input.dtype(), a);
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

// grad: (*, Ho, Wo), indices: int64 of grad's shape; MaxPool2dBackwardAttributes.
void infer_max_pool2d_backward(const OpCall& call, OutputSpecs& outputs) {
  const Tensor& grad = call.input(0);
  const Tensor& indices = call.input(1);
  const DimVector input_sizes = MaxPool2dBackwardAttributes::from(call.attributes).input_sizes;
  check_backward(call, grad, input_sizes);
  GROVE_OP_CHECK(call, indices.dtype() == DType::Int64, "expected int64 indices, but got ",
                 indices.dtype());
  GROVE_OP_CHECK(call, indices.sizes() == grad.sizes(),
                 "expected indices of grad's shape (both max_pool2d_with_indices' outputs' shape) ",
                 grad.sizes(), ", but got ", indices.sizes());
  outputs.add(input_sizes, grad.dtype());
}

// grad: (*, Ho, Wo); Pool2dAttributes with input_sizes.
void infer_avg_pool2d_backward(const OpCall& call, OutputSpecs& outputs) {
  const Tensor& grad = call.input(0);
  const Pool2dAttributes a = Pool2dAttributes::from(call.attributes);
  const IntArrayRef input_sizes = a.input_sizes;
  check_backward(call, grad, input_sizes);
  const DimVector expected = pooled_sizes(call, input_sizes, grad.dtype(), a);
  GROVE_OP_CHECK(call, grad.sizes() == IntArrayRef(expected), "expected grad of shape ",
                 IntArrayRef(expected), " (avg_pool2d's output for input sizes ", input_sizes,
                 "), but got ", grad.sizes());
  outputs.add(input_sizes, grad.dtype());
}

// Attributes: Pool2dAttributes (ops/attributes.h). Outputs: values and int64 indices.
constexpr InputSpec kPoolInputs[] = {{"x"}};
constexpr InputSpec kMaxPool2dBackwardInputs[] = {{"grad"}, {"indices", InputDTypes::Index}};
constexpr InputSpec kAvgPool2dBackwardInputs[] = {{"grad"}};

// Attributes: Pool2dAttributes. max_pool2d outputs the values and their indices.
constexpr OpEntry kMaxPool2d{.kind = OpKind::MaxPool2d,
                             .inputs = kPoolInputs,
                             .infer = infer_pool2d,
                             .cpu = cpu::max_pool2d,
                             .cuda = GROVE_CUDA_KERNEL(max_pool2d),
                             .describe = describe_as<Pool2dAttributes>};
constexpr OpEntry kAvgPool2d{.kind = OpKind::AvgPool2d,
                             .inputs = kPoolInputs,
                             .infer = infer_pool2d,
                             .cpu = cpu::avg_pool2d,
                             .cuda = GROVE_CUDA_KERNEL(avg_pool2d),
                             .describe = describe_as<Pool2dAttributes>};
// Attributes: MaxPool2dBackwardAttributes.
constexpr OpEntry kMaxPool2dBackward{.kind = OpKind::MaxPool2dBackward,
                                     .inputs = kMaxPool2dBackwardInputs,
                                     .infer = infer_max_pool2d_backward,
                                     .cpu = cpu::max_pool2d_backward,
                                     .cuda = GROVE_CUDA_KERNEL(max_pool2d_backward),
                                     .describe = describe_as<MaxPool2dBackwardAttributes>};
// Attributes: Pool2dAttributes (the forward's window) with input_sizes.
constexpr OpEntry kAvgPool2dBackward{.kind = OpKind::AvgPool2dBackward,
                                     .inputs = kAvgPool2dBackwardInputs,
                                     .infer = infer_avg_pool2d_backward,
                                     .cpu = cpu::avg_pool2d_backward,
                                     .cuda = GROVE_CUDA_KERNEL(avg_pool2d_backward),
                                     .describe = describe_as<Pool2dAttributes>};

Pool2dAttributes window_attributes(const OpEntry& entry, IntArrayRef kernel, IntArrayRef stride,
                                   IntArrayRef padding) {
  Pool2dAttributes attributes;
  attributes.kernel = pair_of(kernel, entry.kind, "the kernel size");
  attributes.stride = pair_of(stride.empty() ? kernel : stride, entry.kind, "the stride");
  attributes.padding = pair_of(padding, entry.kind, "the padding");
  return attributes;
}

OpOutputs pool(const OpEntry& entry, const Tensor& input, IntArrayRef kernel, IntArrayRef stride,
               IntArrayRef padding) {
  return dispatch(entry, {input},
                  window_attributes(entry, kernel, stride, padding).to_attributes());
}

DimVector checked_input_sizes(IntArrayRef input_sizes, const OpEntry& entry) {
  GROVE_CHECK(input_sizes.size() == 3 || input_sizes.size() == 4, op_name(entry.kind),
              ": expected input_sizes of 3 values (C, H, W) or 4 (N, C, H, W), but got ",
              input_sizes);
  return DimVector(input_sizes);
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
  const MaxPool2dBackwardAttributes attributes{
      checked_input_sizes(input_sizes, kMaxPool2dBackward)};
  return dispatch(kMaxPool2dBackward, {grad, indices}, attributes.to_attributes())[0];
}

Tensor avg_pool2d_backward(const Tensor& grad, IntArrayRef input_sizes, IntArrayRef kernel,
                           IntArrayRef stride, IntArrayRef padding) {
  Pool2dAttributes attributes = window_attributes(kAvgPool2dBackward, kernel, stride, padding);
  attributes.input_sizes = checked_input_sizes(input_sizes, kAvgPool2dBackward);
  return dispatch(kAvgPool2dBackward, {grad}, attributes.to_attributes())[0];
}

std::span<const OpEntry> pool_entries() {
  static constexpr OpEntry kEntries[] = {kMaxPool2d, kAvgPool2d, kMaxPool2dBackward,
                                         kAvgPool2dBackward};
  return kEntries;
}

}  // namespace grove::ops
