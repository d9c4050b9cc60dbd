// Derivative rules of the shape ops that copy (ops/shape.h) and of the random ops
// (ops/random.h). Views (slice, transpose, ...) are not ops: see autograd/derived_node.h.
#include "autograd/rules_helpers.h"
#include "ops/attributes.h"
#include "ops/elementwise.h"
#include "ops/shape.h"

namespace grove::autograd {
namespace {

using namespace grove::ops;

// y = cat(x0, x1, ...) along dim:  dxi = the slice of g where xi went
GROVE_BACKWARD(cat) {
  const std::int64_t dim =
      wrap_dim(CatAttributes::from(ctx.attributes).dim, ctx.grad.dim(), "cat backward");
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < ctx.inputs.size(); ++i) {
    const std::int64_t length = ctx.inputs[i].sizes[static_cast<std::size_t>(dim)];
    if (ctx.needs(i)) grads[i] = ctx.grad.narrow(dim, offset, length);
    offset += length;
  }
}

// y = tril(x, k):  dx = tril(g, k)
GROVE_BACKWARD(tril) {
  grads[0] = tril(ctx.grad, TriangleAttributes::from(ctx.attributes).diagonal);
}

// y = triu(x, k):  dx = triu(g, k)
GROVE_BACKWARD(triu) {
  grads[0] = triu(ctx.grad, TriangleAttributes::from(ctx.attributes).diagonal);
}

// y = x mask / (1 - p):  dx = g mask / (1 - p)   (output 1 is the bool keep-mask)
GROVE_BACKWARD(dropout) {
  const double scale = 1.0 / (1.0 - DropoutAttributes::from(ctx.attributes).p);
  grads[0] = where(ctx.output(1), mul(ctx.grad, scale), rules::zero_scalar(ctx.grad));
}

constexpr std::uint8_t kOut1 = 2;
using D = Differentiability;

// clang-format off
constexpr DerivativeRule kRules[] = {
    {OpKind::Cat, D::Rule, 0, 0, false, cat_backward},
    {OpKind::Tril, D::Rule, 0, 0, false, tril_backward},
    {OpKind::Triu, D::Rule, 0, 0, false, triu_backward},
    {OpKind::OneHot, D::Never},
    {OpKind::Rand, D::Never}, {OpKind::Randn, D::Never}, {OpKind::Randint, D::Never},
    {OpKind::Dropout, D::Rule, 0, kOut1, false, dropout_backward},
};
// clang-format on

}  // namespace

std::span<const DerivativeRule> shape_rules() {
  return kRules;
}

}  // namespace grove::autograd
