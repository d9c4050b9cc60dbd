// Derivative rules of the elementwise ops (ops/elementwise.h), in op_kind.h order.
// g is the gradient of the output; gradients come back in the broadcast shape and OpNode sums
// them to each input's shape.
#include <cmath>

#include "autograd/rules_helpers.h"
#include "ops/attributes.h"
#include "ops/elementwise.h"

namespace grove::autograd {
namespace {

using namespace grove::ops;
using rules::zero_scalar;

// d(a+b)/da = g, d(a+b)/db = g
GROVE_BACKWARD(add) {
  grads[0] = ctx.grad;
  if (ctx.needs(1)) grads[1] = ctx.grad;
}

// d(a-b)/da = g, d(a-b)/db = -g
GROVE_BACKWARD(sub) {
  grads[0] = ctx.grad;
  if (ctx.needs(1)) grads[1] = neg(ctx.grad);
}

// d(a*b)/da = g * b, d(a*b)/db = g * a   (scalar b: g * b)
GROVE_BACKWARD(mul) {
  if (ctx.attributes.has_scalar) {
    grads[0] = mul(ctx.grad, ctx.attributes.scalar);
    return;
  }
  if (ctx.needs(0)) grads[0] = mul(ctx.grad, ctx.input(1));
  if (ctx.needs(1)) grads[1] = mul(ctx.grad, ctx.input(0));
}

// d(a/b)/da = g / b, d(a/b)/db = -g * a / b^2   (scalar b: g / b)
GROVE_BACKWARD(div) {
  if (ctx.attributes.has_scalar) {
    grads[0] = div(ctx.grad, ctx.attributes.scalar);
    return;
  }
  const Tensor& b = ctx.input(1);
  if (ctx.needs(0)) grads[0] = div(ctx.grad, b);
  if (ctx.needs(1)) grads[1] = neg(div(mul(ctx.grad, ctx.input(0)), mul(b, b)));
}

// d max(a,b)/da = g where a > b, g/2 where a == b, 0 elsewhere (and symmetrically for b);
// ties split the gradient, as in PyTorch. minimum swaps the comparison.
void extremum_backward(const BackwardContext& ctx, InputGrads& grads, bool is_max) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  const Tensor zero = zero_scalar(ctx.grad);
  const Tensor tie = where(eq(a, b), mul(ctx.grad, 0.5), zero);
  if (ctx.needs(0)) grads[0] = where(is_max ? gt(a, b) : lt(a, b), ctx.grad, tie);
  if (ctx.needs(1)) grads[1] = where(is_max ? lt(a, b) : gt(a, b), ctx.grad, tie);
}
GROVE_BACKWARD(maximum) {
  extremum_backward(ctx, grads, true);
}
GROVE_BACKWARD(minimum) {
  extremum_backward(ctx, grads, false);
}

// d where(c, a, b)/da = g where c, d/db = g where not c; the condition gets none.
GROVE_BACKWARD(where) {
  const Tensor& condition = ctx.input(0);
  const Tensor zero = zero_scalar(ctx.grad);
  if (ctx.needs(1)) grads[1] = where(condition, ctx.grad, zero);
  if (ctx.needs(2)) grads[2] = where(condition, zero, ctx.grad);
}

// d masked_fill(x, mask, v)/dx = g where not mask
GROVE_BACKWARD(masked_fill) {
  grads[0] = masked_fill(ctx.grad, ctx.input(1), 0);
}

// d clamp(x, low, high)/dx = g where low <= x <= high, 0 elsewhere
GROVE_BACKWARD(clamp) {
  const Tensor& x = ctx.input(0);
  const auto [low, high] = ClampAttributes::from(ctx.attributes);
  Tensor grad = ctx.grad;
  if (std::isfinite(low)) grad = masked_fill(grad, lt(x, low), 0);
  if (std::isfinite(high)) grad = masked_fill(grad, gt(x, high), 0);
  grads[0] = grad;
}

// d(-x)/dx = -g
GROVE_BACKWARD(neg) {
  grads[0] = neg(ctx.grad);
}

// d exp(x)/dx = g * exp(x)   (the saved output)
GROVE_BACKWARD(exp) {
  grads[0] = mul(ctx.grad, ctx.output(0));
}

// d log(x)/dx = g / x
GROVE_BACKWARD(log) {
  grads[0] = div(ctx.grad, ctx.input(0));
}

// d sqrt(x)/dx = g / (2 sqrt(x))
GROVE_BACKWARD(sqrt) {
  grads[0] = div(ctx.grad, mul(ctx.output(0), 2.0));
}

// d x^(-1/2)/dx = -1/2 g x^(-3/2) = -1/2 g y^3
GROVE_BACKWARD(rsqrt) {
  const Tensor& y = ctx.output(0);
  grads[0] = mul(mul(ctx.grad, mul(mul(y, y), y)), -0.5);
}

// d x^e/dx = g e x^(e-1)   (0 when e == 0)
GROVE_BACKWARD(pow) {
  const double exponent = PowAttributes::from(ctx.attributes).exponent;
  if (exponent == 0.0) {
    grads[0] = mul(ctx.grad, 0.0);
    return;
  }
  grads[0] = mul(mul(ctx.grad, pow(ctx.input(0), exponent - 1.0)), exponent);
}

// d|x|/dx = g sign(x)   (0 at x == 0)
GROVE_BACKWARD(abs) {
  const Tensor& x = ctx.input(0);
  const Tensor zero = zero_scalar(ctx.grad);
  grads[0] = where(gt(x, 0), ctx.grad, where(lt(x, 0), neg(ctx.grad), zero));
}

// d tanh(x)/dx = g (1 - y^2)
GROVE_BACKWARD(tanh) {
  const Tensor& y = ctx.output(0);
  grads[0] = mul(ctx.grad, sub(ones({}, TensorOptions(y.dtype()).device(y.device())), mul(y, y)));
}

// d sigmoid(x)/dx = g y (1 - y)
GROVE_BACKWARD(sigmoid) {
  const Tensor& y = ctx.output(0);
  grads[0] = mul(ctx.grad, mul(y, sub(ones({}, TensorOptions(y.dtype()).device(y.device())), y)));
}

// d relu(x)/dx = g where y > 0   (0 at x == 0, as in PyTorch)
GROVE_BACKWARD(relu) {
  grads[0] = ops::relu_backward(ctx.grad, ctx.output(0));
}

// relu_backward(g, y) = g where y > 0: linear in g, so d/dg = gg where y > 0; y only selects
// (its derivative is 0 wherever it is defined), so it gets no gradient.
GROVE_BACKWARD(relu_backward) {
  if (ctx.needs(0)) grads[0] = ops::relu_backward(ctx.grad, ctx.input(1));
}

// d gelu(x)/dx = g (Phi(x) + x phi(x))   (or the tanh approximation's derivative)
GROVE_BACKWARD(gelu) {
  grads[0] =
      ops::gelu_backward(ctx.grad, ctx.input(0), GeluAttributes::from(ctx.attributes).approximate);
}

constexpr std::uint8_t kIn0 = 1;
constexpr std::uint8_t kIn1 = 2;
constexpr std::uint8_t kIn01 = 3;
constexpr std::uint8_t kOut0 = 1;
using D = Differentiability;

// clang-format off
constexpr DerivativeRule kRules[] = {
    {OpKind::Add, D::Rule, 0, 0, false, add_backward},
    {OpKind::Sub, D::Rule, 0, 0, false, sub_backward},
    {OpKind::Mul, D::Rule, kIn01, 0, false, mul_backward, {kIn1, kIn0}},
    {OpKind::Div, D::Rule, kIn01, 0, false, div_backward, {kIn1, 0}},
    {OpKind::Maximum, D::Rule, kIn01, 0, false, maximum_backward},
    {OpKind::Minimum, D::Rule, kIn01, 0, false, minimum_backward},
    {OpKind::Eq, D::Never}, {OpKind::Ne, D::Never}, {OpKind::Lt, D::Never},
    {OpKind::Le, D::Never}, {OpKind::Gt, D::Never}, {OpKind::Ge, D::Never},
    {OpKind::Where, D::Rule, kIn0, 0, false, where_backward},
    {OpKind::MaskedFill, D::Rule, kIn1, 0, false, masked_fill_backward},
    {OpKind::Clamp, D::Rule, kIn0, 0, false, clamp_backward},
    {OpKind::Neg, D::Rule, 0, 0, false, neg_backward},
    {OpKind::Exp, D::Rule, 0, kOut0, false, exp_backward},
    {OpKind::Log, D::Rule, kIn0, 0, false, log_backward},
    {OpKind::Sqrt, D::Rule, 0, kOut0, false, sqrt_backward},
    {OpKind::Rsqrt, D::Rule, 0, kOut0, false, rsqrt_backward},
    {OpKind::Pow, D::Rule, kIn0, 0, false, pow_backward},
    {OpKind::Abs, D::Rule, kIn0, 0, false, abs_backward},
    {OpKind::Tanh, D::Rule, 0, kOut0, false, tanh_backward},
    {OpKind::Sigmoid, D::Rule, 0, kOut0, false, sigmoid_backward},
    {OpKind::Relu, D::Rule, 0, kOut0, false, relu_backward},
    {OpKind::Gelu, D::Rule, kIn0, 0, false, gelu_backward},
    {OpKind::GeluBackward, D::NoRule},
    {OpKind::ReluBackward, D::Rule, kIn1, 0, false, relu_backward_backward},
};
// clang-format on

}  // namespace

std::span<const DerivativeRule> elementwise_rules() {
  return kRules;
}

}  // namespace grove::autograd
