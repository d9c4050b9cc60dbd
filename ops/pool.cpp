// 2-d pooling: argument checks, output shapes and the user functions. Kernels are in
// ops/cpu/pool.cpp.
#include "ops/pool.h"

#include "ops/cpu/pool.h"
#include "ops/dispatch.h"

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

// input: (N, C, H, W) or (C, H, W) -> values (and for max_pool2d int64 indices) of the same
// rank with (Ho, Wo) planes.
void infer_pool2d(const OpCall& call, OutputSpecs& outputs) {
  const Tensor& input = call.input(0);
  const DimVector& a = call.attributes.ints;
  GROVE_INTERNAL_ASSERT(a.size() == kNumPoolAttributes, "pooling takes 6 attribute ints");
  GROVE_OP_CHECK(call, input.dim() == 3 || input.dim() == 4,
                 "expected a 3-d (C, H, W) or 4-d (N, C, H, W) input, but got ", input.dim(), "-d");
  GROVE_OP_CHECK(call, is_floating_point(input.dtype()),
                 "expected a float32 or float64 input, but got ", input.dtype());
  GROVE_OP_CHECK(call, a[kKernelH] >= 1 && a[kKernelW] >= 1,
                 "expected a kernel size >= 1, but got (", a[kKernelH], ", ", a[kKernelW], ")");
  GROVE_OP_CHECK(call, a[kStrideH] >= 1 && a[kStrideW] >= 1, "expected strides >= 1, but got (",
                 a[kStrideH], ", ", a[kStrideW], ")");
  GROVE_OP_CHECK(call,
                 a[kPaddingH] >= 0 && a[kPaddingW] >= 0 && 2 * a[kPaddingH] <= a[kKernelH] &&
                     2 * a[kPaddingW] <= a[kKernelW],
                 "expected paddings between 0 and half the kernel (", a[kKernelH], ", ",
                 a[kKernelW], "), but got (", a[kPaddingH], ", ", a[kPaddingW], ")");
  GROVE_OP_CHECK(call, input.size(-2) > 0 && input.size(-1) > 0,
                 "expected a non-empty input plane, but got height ", input.size(-2), " and width ",
                 input.size(-1));
  const std::int64_t height = input.size(-2) + 2 * a[kPaddingH];
  const std::int64_t width = input.size(-1) + 2 * a[kPaddingW];
  GROVE_OP_CHECK(call, height >= a[kKernelH] && width >= a[kKernelW], "the kernel (", a[kKernelH],
                 ", ", a[kKernelW], ") is larger than the padded input (", height, ", ", width,
                 "), so the output would be empty");
  DimVector sizes(input.sizes());
  sizes[sizes.size() - 2] = (height - a[kKernelH]) / a[kStrideH] + 1;
  sizes[sizes.size() - 1] = (width - a[kKernelW]) / a[kStrideW] + 1;
  outputs.add(sizes, input.dtype());
  if (call.kind == OpKind::MaxPool2d) outputs.add(sizes, DType::Int64);
}

// Outputs: values and int64 indices.
constexpr OpEntry kMaxPool2d{OpKind::MaxPool2d, infer_pool2d, cpu::max_pool2d, nullptr};
constexpr OpEntry kAvgPool2d{OpKind::AvgPool2d, infer_pool2d, cpu::avg_pool2d, nullptr};

// (h, w) from a list of one or two values, as PyTorch's _pair.
void append_pair(DimVector& ints, IntArrayRef values, const OpEntry& entry, const char* what) {
  GROVE_CHECK(values.size() == 1 || values.size() == 2, op_name(entry.kind), ": expected ", what,
              " as one value or two (height, width), but got ", values);
  ints.push_back(values[0]);
  ints.push_back(values[values.size() - 1]);
}

OpOutputs pool(const OpEntry& entry, const Tensor& input, IntArrayRef kernel, IntArrayRef stride,
               IntArrayRef padding) {
  OpAttributes attributes;
  append_pair(attributes.ints, kernel, entry, "the kernel size");
  append_pair(attributes.ints, stride.empty() ? kernel : stride, entry, "the stride");
  append_pair(attributes.ints, padding, entry, "the padding");
  return dispatch(entry, {input}, attributes);
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

}  // namespace grove::ops
