// Derivative rules of the reductions (ops/reduce.h). Attributes: ReduceAttributes
// (ops/attributes.h): the dims as the user gave them (empty: every dim), keepdim, and var's
// correction.
#include "autograd/rules_helpers.h"
#include "ops/attributes.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"

namespace grove::autograd {
namespace {

using namespace grove::ops;
using rules::expand_reduced;
using rules::reduced_count;
using rules::zero_scalar;

// d sum(x)/dx = g, copied over the reduced dims
GROVE_BACKWARD(sum) {
  const ReduceAttributes a = ReduceAttributes::from(ctx.attributes);
  grads[0] = expand_reduced(ctx.grad, ctx.inputs[0].sizes, a.dims, a.keepdim);
}

// d mean(x)/dx = g / N, N = the number of elements averaged
GROVE_BACKWARD(mean) {
  const ReduceAttributes a = ReduceAttributes::from(ctx.attributes);
  const IntArrayRef sizes = ctx.inputs[0].sizes;
  const std::int64_t count = reduced_count(sizes, a.dims);
  grads[0] = div(expand_reduced(ctx.grad, sizes, a.dims, a.keepdim), static_cast<double>(count));
}

// max over a dim: the gradient goes to the element its index output names.
// max over every element: shared evenly among the elements equal to the maximum.
// max of a 0-d tensor over dim 0 (or -1): the identity, dx = g.
GROVE_BACKWARD(max) {
  const Tensor& x = ctx.input(0);
  const ReduceAttributes a = ReduceAttributes::from(ctx.attributes);
  const Tensor zero = zero_scalar(ctx.grad);
  if (x.dim() == 0) {
    grads[0] = ctx.grad.reshape({});
    return;
  }
  if (a.dims.empty()) {
    const Tensor is_max = eq(x, ctx.output(0));
    const Tensor one = ones({}, TensorOptions(x.dtype()).device(x.device()));
    const Tensor count = sum(where(is_max, one, zero));
    grads[0] = where(is_max, div(ctx.grad, count), zero);
    return;
  }
  const std::int64_t dim = wrap_dim(a.dims[0], x.dim(), "max backward");
  const bool keepdim = a.keepdim;
  const Tensor indices = keepdim ? ctx.output(1) : ctx.output(1).unsqueeze(dim);
  const Tensor grad = keepdim ? ctx.grad : ctx.grad.unsqueeze(dim);
  DimVector positions_shape(static_cast<std::size_t>(x.dim()), 1);
  positions_shape[static_cast<std::size_t>(dim)] = x.size(dim);
  const Tensor positions =
      arange(static_cast<double>(x.size(dim)), TensorOptions(DType::Int64).device(x.device()))
          .view(positions_shape);
  grads[0] = where(eq(positions, indices), grad, zero);
}

// d var(x)/dx = g 2 (x - mean(x)) / (N - correction)
GROVE_BACKWARD(var) {
  const Tensor& x = ctx.input(0);
  const ReduceAttributes a = ReduceAttributes::from(ctx.attributes);
  const IntArrayRef dims = a.dims;
  const double divisor = static_cast<double>(reduced_count(x.sizes(), dims)) - a.correction;
  const Tensor centered = sub(x, dims.empty() ? mean(x) : mean(x, dims, /*keepdim=*/true));
  const Tensor grad = expand_reduced(ctx.grad, x.sizes(), dims, a.keepdim);
  grads[0] = mul(mul(grad, centered), 2.0 / divisor);
}

constexpr std::uint8_t kIn0 = 1;
using D = Differentiability;

// clang-format off
constexpr DerivativeRule kRules[] = {
    {OpKind::Sum, D::Rule, 0, 0, false, sum_backward},
    {OpKind::Mean, D::Rule, 0, 0, false, mean_backward},
    {OpKind::Max, D::Rule, kIn0, 0b11, false, max_backward},
    {OpKind::Argmax, D::Never},
    {OpKind::Var, D::Rule, kIn0, 0, false, var_backward},
};
// clang-format on

}  // namespace

std::span<const DerivativeRule> reduce_rules() {
  return kRules;
}

}  // namespace grove::autograd
