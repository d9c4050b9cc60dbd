// conv2d: argument checks, output shape and the user function. The kernel (im2col + GEMM) is in
// ops/cpu/conv.cpp.
#include "ops/conv.h"

#include "ops/cpu/conv.h"
#include "ops/dispatch.h"

namespace grove::ops {
namespace {

// Attribute ints: stride (h, w), padding (h, w), dilation (h, w), groups.
enum ConvAttribute : std::size_t {
  kStrideH,
  kStrideW,
  kPaddingH,
  kPaddingW,
  kDilationH,
  kDilationW,
  kGroups,
  kNumConvAttributes
};

// Output size of one spatial dim; below 1 when the dilated kernel does not fit the padded input.
std::int64_t output_size(std::int64_t input, std::int64_t kernel, std::int64_t stride,
                         std::int64_t padding, std::int64_t dilation) {
  const std::int64_t span = input + 2 * padding - dilation * (kernel - 1) - 1;
  return span < 0 ? 0 : span / stride + 1;
}

// input: (N, C, H, W), weight: (O, C / G, kH, kW), bias (optional third input): (O).
void infer_conv2d(const OpCall& call, OutputSpecs& outputs) {
  const Tensor& input = call.input(0);
  const Tensor& weight = call.input(1);
  const DimVector& a = call.attributes.ints;
  GROVE_INTERNAL_ASSERT(a.size() == kNumConvAttributes, "conv2d takes 7 attribute ints");
  GROVE_OP_CHECK(call, input.dim() == 4, "expected a 4-d input (N, C, H, W), but got ", input.dim(),
                 "-d; add a batch dim with unsqueeze(0)");
  GROVE_OP_CHECK(call, weight.dim() == 4, "expected a 4-d weight (O, C / groups, kH, kW), but got ",
                 weight.dim(), "-d");
  GROVE_OP_CHECK(call, weight.size(2) >= 1 && weight.size(3) >= 1,
                 "expected a kernel of at least 1 x 1, but the weight has shape ", weight.sizes());
  GROVE_OP_CHECK(call, input.dtype() == weight.dtype(),
                 "expected input and weight of one dtype, "
                 "but got ",
                 input.dtype(), " and ", weight.dtype());
  GROVE_OP_CHECK(call, is_floating_point(input.dtype()),
                 "expected float32 or float64 tensors, "
                 "but got ",
                 input.dtype(), "; convert with to(float32)");
  GROVE_OP_CHECK(call, a[kStrideH] >= 1 && a[kStrideW] >= 1, "expected strides >= 1, but got (",
                 a[kStrideH], ", ", a[kStrideW], ")");
  GROVE_OP_CHECK(call, a[kPaddingH] >= 0 && a[kPaddingW] >= 0, "expected paddings >= 0, but got (",
                 a[kPaddingH], ", ", a[kPaddingW], ")");
  GROVE_OP_CHECK(call, a[kDilationH] >= 1 && a[kDilationW] >= 1,
                 "expected dilations >= 1, but got (", a[kDilationH], ", ", a[kDilationW], ")");
  const std::int64_t groups = a[kGroups];
  const std::int64_t channels = input.size(1);
  const std::int64_t out_channels = weight.size(0);
  GROVE_OP_CHECK(call, groups >= 1, "expected groups >= 1, but got ", groups);
  GROVE_OP_CHECK(call, out_channels % groups == 0, "the weight's ", out_channels,
                 " output channels are not divisible by groups = ", groups);
  GROVE_OP_CHECK(call, channels == weight.size(1) * groups, "the input has ", channels,
                 " channels, but the weight expects ", weight.size(1), " x groups (", groups,
                 ") = ", weight.size(1) * groups, ": input ", input.sizes(), ", weight ",
                 weight.sizes());
  if (call.inputs.size() == 3) {
    const Tensor& bias = call.input(2);
    GROVE_OP_CHECK(call, bias.dim() == 1 && bias.size(0) == out_channels,
                   "expected a bias of shape [", out_channels, "], but got ", bias.sizes());
    GROVE_OP_CHECK(call, bias.dtype() == input.dtype(), "expected a ", input.dtype(),
                   " bias, but got ", bias.dtype());
  }
  const std::int64_t out_h =
      output_size(input.size(2), weight.size(2), a[kStrideH], a[kPaddingH], a[kDilationH]);
  const std::int64_t out_w =
      output_size(input.size(3), weight.size(3), a[kStrideW], a[kPaddingW], a[kDilationW]);
  GROVE_OP_CHECK(call, out_h >= 1 && out_w >= 1, "the output would be empty (", out_h, " x ", out_w,
                 "): the kernel ", weight.size(2), " x ", weight.size(3), " with dilation (",
                 a[kDilationH], ", ", a[kDilationW], ") spans ",
                 a[kDilationH] * (weight.size(2) - 1) + 1, " x ",
                 a[kDilationW] * (weight.size(3) - 1) + 1, ", more than the padded input ",
                 input.size(2) + 2 * a[kPaddingH], " x ", input.size(3) + 2 * a[kPaddingW]);
  outputs.add({input.size(0), out_channels, out_h, out_w}, input.dtype());
}

constexpr OpEntry kConv2d{OpKind::Conv2d, infer_conv2d, cpu::conv2d, nullptr};

// (h, w) from a list of one or two values, as PyTorch's _pair.
void append_pair(DimVector& ints, IntArrayRef values, const char* what) {
  GROVE_CHECK(values.size() == 1 || values.size() == 2, "conv2d: expected ", what,
              " as one value or two (height, width), but got ", values);
  ints.push_back(values[0]);
  ints.push_back(values[values.size() - 1]);
}

}  // namespace

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, std::int64_t groups) {
  OpAttributes attributes;
  append_pair(attributes.ints, stride, "stride");
  append_pair(attributes.ints, padding, "padding");
  append_pair(attributes.ints, dilation, "dilation");
  attributes.ints.push_back(groups);
  if (bias.defined()) return dispatch(kConv2d, {input, weight, bias}, attributes)[0];
  return dispatch(kConv2d, {input, weight}, attributes)[0];
}

}  // namespace grove::ops
