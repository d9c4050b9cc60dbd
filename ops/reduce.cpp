// Reductions: argument checks, output shapes and the user functions. Kernels are in
// ops/cpu/reduce.cpp and ops/cuda/reduce.cu (one for the sum family: sum, mean, var; one for max
// and argmax).
//
// Attributes: ReduceAttributes (ops/attributes.h): the dims as the user gave them (possibly
// negative; empty means every dim), keepdim, and var's correction subtracted from the element
// count (1 for unbiased, 0 for the population variance).
#include "ops/reduce.h"

#include <algorithm>

#include "ops/attributes.h"
#include "ops/cpu/reduce.h"
#include "ops/cuda/reduce.h"
#include "ops/dispatch.h"
#include "ops/op_table.h"

namespace grove::ops {
namespace {

// Checks the dims against the input's rank and returns, per input dim, whether it is reduced. A
// 0-d input accepts dim 0 or -1 (as PyTorch) and has nothing to mark.
DimVector reduced_mask(const OpCall& call, IntArrayRef dims) {
  const Tensor& x = call.input(0);
  const std::int64_t ndim = x.dim();
  DimVector mask(static_cast<std::size_t>(ndim), dims.empty() ? 1 : 0);
  const std::int64_t low = ndim == 0 ? -1 : -ndim;
  const std::int64_t high = ndim == 0 ? 0 : ndim - 1;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const std::int64_t dim = dims[i];
    GROVE_OP_CHECK(call, dim >= low && dim <= high, "dimension ", dim, " is out of range for a ",
                   ndim, "-d input (expected a value in [", low, ", ", high, "])");
    const std::int64_t wrapped = dim < 0 ? dim + std::max<std::int64_t>(ndim, 1) : dim;
    for (std::size_t j = 0; j < i; ++j) {
      const std::int64_t other = dims[j] < 0 ? dims[j] + std::max<std::int64_t>(ndim, 1) : dims[j];
      GROVE_OP_CHECK(call, other != wrapped, "dimension ", dim, " appears more than once in dims ",
                     dims);
    }
    if (ndim > 0) mask[static_cast<std::size_t>(wrapped)] = 1;
  }
  return mask;
}

// The output shape: reduced dims become 1 (keepdim) or disappear.
DimVector reduced_shape(const Tensor& x, const DimVector& mask, bool keepdim) {
  DimVector shape;
  for (std::size_t d = 0; d < mask.size(); ++d) {
    if (!mask[d]) {
      shape.push_back(x.sizes()[d]);
    } else if (keepdim) {
      shape.push_back(1);
    }
  }
  return shape;
}

// sum, mean, var.
void infer_sum_like(const OpCall& call, OutputSpecs& outputs) {
  const Tensor& x = call.input(0);
  const ReduceAttributes a = ReduceAttributes::from(call.attributes);
  const DType dtype = x.dtype();
  DType out_dtype = dtype;
  if (call.kind == OpKind::Sum) {
    if (dtype == DType::Int32 || dtype == DType::Bool) out_dtype = DType::Int64;
  } else {
    GROVE_OP_CHECK(call, is_floating_point(dtype), "expected a floating-point input, but got ",
                   dtype, "; convert it with to(float32) (sum keeps integer dtypes)");
  }
  if (call.kind == OpKind::Var) {
    GROVE_OP_CHECK(call, a.correction >= 0.0, "the correction must not be negative, but got ",
                   a.correction);
  }
  const DimVector mask = reduced_mask(call, a.dims);
  outputs.add(reduced_shape(x, mask, a.keepdim), out_dtype);
}

// max (values, indices; or values alone when ints is empty) and argmax (indices).
void infer_max_like(const OpCall& call, OutputSpecs& outputs) {
  const Tensor& x = call.input(0);
  GROVE_OP_CHECK(call, x.dtype() != DType::Bool,
                 "expected a numeric input, but got bool; "
                 "convert it with to(int64)");
  const ReduceAttributes a = ReduceAttributes::from(call.attributes);
  const bool full = a.dims.empty();
  const DType index_dtype = DType::Int64;
  if (full) {
    GROVE_OP_CHECK(call, x.numel() > 0, "cannot reduce an empty tensor (shape ", x.sizes(),
                   "): the maximum of no elements is undefined");
    if (call.kind == OpKind::Max) outputs.add({}, x.dtype());
    if (call.kind == OpKind::Argmax) outputs.add({}, index_dtype);
    return;
  }
  GROVE_INTERNAL_ASSERT(a.dims.size() == 1, "max and argmax take one dim");
  const DimVector mask = reduced_mask(call, a.dims);
  for (std::size_t d = 0; d < mask.size(); ++d) {
    GROVE_OP_CHECK(call, !mask[d] || x.sizes()[d] > 0, "cannot reduce over dimension ", a.dims[0],
                   " of size 0: the maximum of no elements is undefined");
  }
  const DimVector shape = reduced_shape(x, mask, a.keepdim);
  if (call.kind == OpKind::Max) outputs.add(shape, x.dtype());
  outputs.add(shape, index_dtype);
}

// sum takes any dtype (it counts bools, into int64); mean and var floating-point ones; max and
// argmax any numeric one.
constexpr InputSpec kSumInput[] = {{"x", InputDTypes::Any}};
constexpr InputSpec kFloatingInput[] = {{"x", InputDTypes::Floating}};
constexpr InputSpec kNumericInput[] = {{"x", InputDTypes::Numeric}};

std::string describe_reduce(const OpAttributes& a) {
  return ReduceAttributes::from(a).describe(/*with_correction=*/false);
}
std::string describe_var(const OpAttributes& a) {
  return ReduceAttributes::from(a).describe(/*with_correction=*/true);
}

// cuda_reduced: whether the CUDA kernel takes 16-bit inputs as they are (the sums do).
#define GROVE_ENTRY(op, inputs_, infer_fn, kernel_fn, describe_, cuda_reduced) \
  constexpr OpEntry k##op{.kind = OpKind::op,                                  \
                          .inputs = inputs_,                                   \
                          .infer = infer_fn,                                   \
                          .cpu = cpu::kernel_fn,                               \
                          .cuda = GROVE_CUDA_KERNEL(kernel_fn),                \
                          .describe = describe_,                               \
                          .cuda_takes_reduced = cuda_reduced};
// Attributes: ReduceAttributes. max and argmax: dims = {dim} (max outputs values and indices) or
// {} (every element; argmax gives the flat index).
GROVE_ENTRY(Sum, kSumInput, infer_sum_like, reduce_sum, describe_reduce, true)
GROVE_ENTRY(Mean, kFloatingInput, infer_sum_like, reduce_sum, describe_reduce, true)
GROVE_ENTRY(Var, kFloatingInput, infer_sum_like, reduce_sum, describe_var, true)
GROVE_ENTRY(Max, kNumericInput, infer_max_like, reduce_max, describe_reduce, false)
GROVE_ENTRY(Argmax, kNumericInput, infer_max_like, reduce_max, describe_reduce, false)
#undef GROVE_ENTRY

Tensor reduce(const OpEntry& entry, const Tensor& x, IntArrayRef dims, bool keepdim,
              double correction = 0.0) {
  const ReduceAttributes attributes{DimVector(dims), keepdim, correction};
  return dispatch(entry, {x}, attributes.to_attributes())[0];
}

}  // namespace

Tensor sum(const Tensor& x) {
  return reduce(kSum, x, {}, false);
}
Tensor sum(const Tensor& x, IntArrayRef dims, bool keepdim) {
  return reduce(kSum, x, dims, keepdim);
}
Tensor mean(const Tensor& x) {
  return reduce(kMean, x, {}, false);
}
Tensor mean(const Tensor& x, IntArrayRef dims, bool keepdim) {
  return reduce(kMean, x, dims, keepdim);
}

MaxResult max(const Tensor& x, std::int64_t dim, bool keepdim) {
  const ReduceAttributes attributes{DimVector{dim}, keepdim, 0.0};
  OpOutputs outputs = dispatch(kMax, {x}, attributes.to_attributes());
  return {outputs[0], outputs[1]};
}
Tensor max(const Tensor& x) {
  return reduce(kMax, x, {}, false);
}
Tensor argmax(const Tensor& x, std::int64_t dim, bool keepdim) {
  return reduce(kArgmax, x, {dim}, keepdim);
}
Tensor argmax(const Tensor& x) {
  return reduce(kArgmax, x, {}, false);
}

Tensor var(const Tensor& x, IntArrayRef dims, bool unbiased, bool keepdim) {
  return reduce(kVar, x, dims, keepdim, unbiased ? 1.0 : 0.0);
}
Tensor var(const Tensor& x) {
  return reduce(kVar, x, {}, false, 1.0);
}

std::span<const OpEntry> reduce_entries() {
  static constexpr OpEntry kEntries[] = {kSum, kMean, kMax, kArgmax, kVar};
  return kEntries;
}

}  // namespace grove::ops
