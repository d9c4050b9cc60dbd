// conv2d and its two backward ops: argument checks, output shapes and the user functions. The
// kernels (im2col + GEMM, and GEMM + col2im for the input's gradient) are in ops/cpu/conv.cpp
// and ops/cpu/conv_backward.cpp.
#include "ops/conv.h"

#include <atomic>
#include <utility>

#include "ops/attributes.h"
#include "ops/cpu/conv.h"
#include "ops/cuda/conv.h"
#include "ops/dispatch.h"
#include "ops/op_table.h"

namespace grove::ops {
namespace {

// Output size of one spatial dim; below 1 when the dilated kernel does not fit the padded input.
// -1 when the padded input or the dilated kernel does not fit an int64 (a huge padding or
// dilation would otherwise wrap around into a plausible size).
std::int64_t output_size(std::int64_t input, std::int64_t kernel, std::int64_t stride,
                         std::int64_t padding, std::int64_t dilation) {
  std::int64_t padded = 0;
  std::int64_t reach = 0;
  if (__builtin_mul_overflow(padding, 2, &padded) ||
      __builtin_add_overflow(padded, input, &padded) ||
      __builtin_mul_overflow(dilation, kernel - 1, &reach)) {
    return -1;
  }
  const std::int64_t span = padded - reach - 1;
  return span < 0 ? 0 : span / stride + 1;
}

// The rules conv2d and its backward ops share: input (N, C, H, W) and weight (O, C/G, kH, kW)
// sizes (4 values each), dtypes and geometry `a`. Returns the output plane (Ho, Wo).
std::pair<std::int64_t, std::int64_t> check_conv(const OpCall& call, IntArrayRef input,
                                                 IntArrayRef weight, DType input_dtype,
                                                 DType weight_dtype, const Conv2dAttributes& a) {
  GROVE_OP_CHECK(call, weight[2] >= 1 && weight[3] >= 1,
                 "expected a kernel of at least 1 x 1, but the weight has shape ", weight);
  GROVE_OP_CHECK(call, input_dtype == weight_dtype,
                 "expected input and weight of one dtype, "
                 "but got ",
                 input_dtype, " and ", weight_dtype);
  GROVE_OP_CHECK(call, is_floating_point(input_dtype),
                 "expected float32 or float64 tensors, "
                 "but got ",
                 input_dtype, "; convert with to(float32)");
  GROVE_OP_CHECK(call, a.stride[0] >= 1 && a.stride[1] >= 1, "expected strides >= 1, but got (",
                 a.stride[0], ", ", a.stride[1], ")");
  GROVE_OP_CHECK(call, a.padding[0] >= 0 && a.padding[1] >= 0, "expected paddings >= 0, but got (",
                 a.padding[0], ", ", a.padding[1], ")");
  GROVE_OP_CHECK(call, a.dilation[0] >= 1 && a.dilation[1] >= 1,
                 "expected dilations >= 1, but got (", a.dilation[0], ", ", a.dilation[1], ")");
  const std::int64_t groups = a.groups;
  const std::int64_t channels = input[1];
  const std::int64_t out_channels = weight[0];
  GROVE_OP_CHECK(call, groups >= 1, "expected groups >= 1, but got ", groups);
  GROVE_OP_CHECK(call, out_channels % groups == 0, "the weight's ", out_channels,
                 " output channels are not divisible by groups = ", groups);
  GROVE_OP_CHECK(call, channels == weight[1] * groups, "the input has ", channels,
                 " channels, but the weight expects ", weight[1], " x groups (", groups,
                 ") = ", weight[1] * groups, ": input ", input, ", weight ", weight);
  const std::int64_t out_h =
      output_size(input[2], weight[2], a.stride[0], a.padding[0], a.dilation[0]);
  const std::int64_t out_w =
      output_size(input[3], weight[3], a.stride[1], a.padding[1], a.dilation[1]);
  GROVE_OP_CHECK(call, out_h >= 0 && out_w >= 0, "the padding (", a.padding[0], ", ", a.padding[1],
                 ") or dilation (", a.dilation[0], ", ", a.dilation[1],
                 ") is too large: the padded input or the dilated kernel has more elements than "
                 "an int64 can count");
  GROVE_OP_CHECK(call, out_h >= 1 && out_w >= 1, "the output would be empty (", out_h, " x ", out_w,
                 "): the kernel ", weight[2], " x ", weight[3], " with dilation (", a.dilation[0],
                 ", ", a.dilation[1], ") spans ", a.dilation[0] * (weight[2] - 1) + 1, " x ",
                 a.dilation[1] * (weight[3] - 1) + 1, ", more than the padded input ",
                 input[2] + 2 * a.padding[0], " x ", input[3] + 2 * a.padding[1]);
  return {out_h, out_w};
}

// input: (N, C, H, W), weight: (O, C / G, kH, kW), bias (optional third input): (O).
void infer_conv2d(const OpCall& call, OutputSpecs& outputs) {
  const Tensor& input = call.input(0);
  const Tensor& weight = call.input(1);
  const Conv2dAttributes a = Conv2dAttributes::from(call.attributes);
  GROVE_INTERNAL_ASSERT(a.sizes.empty(), "conv2d's attributes hold no sizes");
  GROVE_OP_CHECK(call, input.dim() == 4, "expected a 4-d input (N, C, H, W), but got ", input.dim(),
                 "-d; add a batch dim with unsqueeze(0)");
  GROVE_OP_CHECK(call, weight.dim() == 4, "expected a 4-d weight (O, C / groups, kH, kW), but got ",
                 weight.dim(), "-d");
  const auto [out_h, out_w] =
      check_conv(call, input.sizes(), weight.sizes(), input.dtype(), weight.dtype(), a);
  const std::int64_t out_channels = weight.size(0);
  if (call.inputs.size() == 3) {
    const Tensor& bias = call.input(2);
    GROVE_OP_CHECK(call, bias.dim() == 1 && bias.size(0) == out_channels,
                   "expected a bias of shape [", out_channels, "], but got ", bias.sizes());
    GROVE_OP_CHECK(call, bias.dtype() == input.dtype(), "expected a ", input.dtype(),
                   " bias, but got ", bias.dtype());
  }
  outputs.add({input.size(0), out_channels, out_h, out_w}, input.dtype());
}

// The backward ops: grad (N, O, Ho, Wo) and the other operand, `sizes` of the one they compute.
// grad must be exactly the output conv2d gives for these shapes.
void check_grad(const OpCall& call, const Tensor& grad, IntArrayRef input, IntArrayRef weight,
                std::int64_t out_h, std::int64_t out_w) {
  GROVE_OP_CHECK(call, grad.dtype() == call.input(1).dtype(), "expected grad of dtype ",
                 call.input(1).dtype(), ", but got ", grad.dtype());
  const DimVector expected{input[0], weight[0], out_h, out_w};
  GROVE_OP_CHECK(call, grad.sizes() == IntArrayRef(expected), "expected grad of shape ",
                 IntArrayRef(expected), " (conv2d's output for input ", input, " and weight ",
                 weight, "), but got ", grad.sizes());
}

void check_sizes(const OpCall& call, IntArrayRef sizes, const char* what) {
  for (const std::int64_t size : sizes) {
    GROVE_OP_CHECK(call, size >= 0, "expected ", what, " >= 0, but got ", sizes);
  }
}

// grad: (N, O, Ho, Wo), weight: (O, C / G, kH, kW) -> grad_input: input_sizes (N, C, H, W).
void infer_conv2d_backward_input(const OpCall& call, OutputSpecs& outputs) {
  const Tensor& weight = call.input(1);
  const Conv2dAttributes a = Conv2dAttributes::from(call.attributes);
  GROVE_INTERNAL_ASSERT(a.sizes.size() == Conv2dAttributes::kSizes, "takes input_sizes");
  const IntArrayRef input_sizes = a.sizes;
  GROVE_OP_CHECK(call, weight.dim() == 4, "expected a 4-d weight (O, C / groups, kH, kW), but got ",
                 weight.dim(), "-d");
  check_sizes(call, input_sizes, "input sizes");
  const auto [out_h, out_w] =
      check_conv(call, input_sizes, weight.sizes(), weight.dtype(), weight.dtype(), a);
  check_grad(call, call.input(0), input_sizes, weight.sizes(), out_h, out_w);
  outputs.add(input_sizes, weight.dtype());
}

// grad: (N, O, Ho, Wo), input: (N, C, H, W) -> grad_weight: weight_sizes (O, C / G, kH, kW).
void infer_conv2d_backward_weight(const OpCall& call, OutputSpecs& outputs) {
  const Tensor& input = call.input(1);
  const Conv2dAttributes a = Conv2dAttributes::from(call.attributes);
  GROVE_INTERNAL_ASSERT(a.sizes.size() == Conv2dAttributes::kSizes, "takes weight_sizes");
  const IntArrayRef weight_sizes = a.sizes;
  GROVE_OP_CHECK(call, input.dim() == 4, "expected a 4-d input (N, C, H, W), but got ", input.dim(),
                 "-d");
  check_sizes(call, weight_sizes, "weight sizes");
  const auto [out_h, out_w] =
      check_conv(call, input.sizes(), weight_sizes, input.dtype(), input.dtype(), a);
  check_grad(call, call.input(0), input.sizes(), weight_sizes, out_h, out_w);
  outputs.add(weight_sizes, input.dtype());
}

std::string describe_conv2d_backward_input(const OpAttributes& a) {
  return Conv2dAttributes::from(a).describe("input_sizes");
}
std::string describe_conv2d_backward_weight(const OpAttributes& a) {
  return Conv2dAttributes::from(a).describe("weight_sizes");
}

constexpr InputSpec kConv2dInputs[] = {
    {"input"}, {"weight"}, {"bias", InputDTypes::Floating, true}};
constexpr InputSpec kConv2dBackwardInputInputs[] = {{"grad"}, {"weight"}};
constexpr InputSpec kConv2dBackwardWeightInputs[] = {{"grad"}, {"input"}};

// Attributes: Conv2dAttributes (ops/attributes.h).
constexpr OpEntry kConv2d{.kind = OpKind::Conv2d,
                          .inputs = kConv2dInputs,
                          .infer = infer_conv2d,
                          .cpu = cpu::conv2d,
                          .cuda = GROVE_CUDA_KERNEL(conv2d),
                          .describe = describe_as<Conv2dAttributes>};
// Conv2dAttributes with sizes = input_sizes.
constexpr OpEntry kConv2dBackwardInput{.kind = OpKind::Conv2dBackwardInput,
                                       .inputs = kConv2dBackwardInputInputs,
                                       .infer = infer_conv2d_backward_input,
                                       .cpu = cpu::conv2d_backward_input,
                                       .cuda = GROVE_CUDA_KERNEL(conv2d_backward_input),
                                       .describe = describe_conv2d_backward_input};
// Conv2dAttributes with sizes = weight_sizes.
constexpr OpEntry kConv2dBackwardWeight{.kind = OpKind::Conv2dBackwardWeight,
                                        .inputs = kConv2dBackwardWeightInputs,
                                        .infer = infer_conv2d_backward_weight,
                                        .cpu = cpu::conv2d_backward_weight,
                                        .cuda = GROVE_CUDA_KERNEL(conv2d_backward_weight),
                                        .describe = describe_conv2d_backward_weight};

OpAttributes conv_attributes(const OpEntry& entry, IntArrayRef stride, IntArrayRef padding,
                             IntArrayRef dilation, std::int64_t groups, IntArrayRef sizes = {},
                             const char* sizes_name = "") {
  Conv2dAttributes attributes;
  if (entry.kind != OpKind::Conv2d) {
    GROVE_CHECK(sizes.size() == Conv2dAttributes::kSizes, op_name(entry.kind), ": expected ",
                sizes_name, " of 4 values, but got ", sizes);
    attributes.sizes = sizes;
  }
  attributes.stride = pair_of(stride, entry.kind, "stride");
  attributes.padding = pair_of(padding, entry.kind, "padding");
  attributes.dilation = pair_of(dilation, entry.kind, "dilation");
  attributes.groups = groups;
  return attributes.to_attributes();
}

std::atomic<bool> g_conv_benchmark{false};

}  // namespace

void set_conv_benchmark(bool on) {
  g_conv_benchmark.store(on, std::memory_order_relaxed);
}
bool conv_benchmark() {
  return g_conv_benchmark.load(std::memory_order_relaxed);
}

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, std::int64_t groups) {
  const OpAttributes attributes = conv_attributes(kConv2d, stride, padding, dilation, groups);
  if (bias.defined()) return dispatch(kConv2d, {input, weight, bias}, attributes)[0];
  return dispatch(kConv2d, {input, weight}, attributes)[0];
}

Tensor conv2d_backward_input(const Tensor& grad, const Tensor& weight, IntArrayRef input_sizes,
                             IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                             std::int64_t groups) {
  const OpAttributes attributes = conv_attributes(kConv2dBackwardInput, stride, padding, dilation,
                                                  groups, input_sizes, "input_sizes (N, C, H, W)");
  return dispatch(kConv2dBackwardInput, {grad, weight}, attributes)[0];
}

Tensor conv2d_backward_weight(const Tensor& grad, const Tensor& input, IntArrayRef weight_sizes,
                              IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                              std::int64_t groups) {
  const OpAttributes attributes =
      conv_attributes(kConv2dBackwardWeight, stride, padding, dilation, groups, weight_sizes,
                      "weight_sizes (O, C / groups, kH, kW)");
  return dispatch(kConv2dBackwardWeight, {grad, input}, attributes)[0];
}

std::span<const OpEntry> conv_entries() {
  static constexpr OpEntry kEntries[] = {kConv2d, kConv2dBackwardInput, kConv2dBackwardWeight};
  return kEntries;
}

}  // namespace grove::ops
