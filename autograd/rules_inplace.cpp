// Derivative rules of the in-place updates (ops/inplace.h). Saved input 0 is the target's old
// value (kept only when keeps_old_self); see the conventions in derivatives.h.
#include "autograd/rules_helpers.h"
#include "ops/elementwise.h"

namespace grove::autograd {
namespace {

using namespace grove::ops;

// x += alpha * y:  dx = g, dy = alpha g
GROVE_BACKWARD(add_inplace) {
  grads[0] = ctx.grad;
  if (ctx.needs(1)) grads[1] = mul(ctx.grad, ctx.attributes.scalar);
}

// x *= y:  dx = g y, dy = g x_old   (scalar y: dx = g y)
GROVE_BACKWARD(mul_inplace) {
  if (ctx.attributes.has_scalar) {
    grads[0] = mul(ctx.grad, ctx.attributes.scalar);
    return;
  }
  if (ctx.needs(0)) grads[0] = mul(ctx.grad, ctx.input(1));
  if (ctx.needs(1)) grads[1] = mul(ctx.grad, ctx.input(0));
}

// x += v a b:  dx = g, da = v g b, db = v g a
GROVE_BACKWARD(addcmul) {
  const Scalar& value = ctx.attributes.scalar;
  grads[0] = ctx.grad;
  if (ctx.needs(1)) grads[1] = mul(mul(ctx.grad, ctx.input(2)), value);
  if (ctx.needs(2)) grads[2] = mul(mul(ctx.grad, ctx.input(1)), value);
}

// x += v a / b:  dx = g, da = v g / b, db = -v g a / b^2
GROVE_BACKWARD(addcdiv) {
  const Scalar& value = ctx.attributes.scalar;
  const Tensor& b = ctx.input(2);
  grads[0] = ctx.grad;
  if (ctx.needs(1)) grads[1] = mul(div(ctx.grad, b), value);
  if (ctx.needs(2))
    grads[2] = mul(div(mul(ctx.grad, ctx.input(1)), mul(b, b)), -value.to<double>());
}

// x = x + w (end - x):  dx = g (1 - w), dend = g w, dw = g (end - x_old)
GROVE_BACKWARD(lerp) {
  if (ctx.attributes.has_scalar) {
    const double w = ctx.attributes.scalar.to<double>();
    grads[0] = mul(ctx.grad, 1.0 - w);
    if (ctx.needs(1)) grads[1] = mul(ctx.grad, w);
    return;
  }
  const Tensor& w = ctx.input(2);
  if (ctx.needs(0)) grads[0] = sub(ctx.grad, mul(ctx.grad, w));
  if (ctx.needs(1)) grads[1] = mul(ctx.grad, w);
  if (ctx.needs(2)) grads[2] = mul(ctx.grad, sub(ctx.input(1), ctx.input(0)));
}

// x = src:  dx = 0, dsrc = g (in src's dtype; OpNode sums broadcast dims)
GROVE_BACKWARD(copy) {
  if (ctx.needs(1)) grads[1] = ctx.grad.to(ctx.inputs[1].dtype);
}

// x = constant or random numbers: no gradient reaches x's old value.
GROVE_BACKWARD(overwrite) {}

constexpr std::uint8_t kIn0 = 1;
constexpr std::uint8_t kIn1 = 2;
constexpr std::uint8_t kIn2 = 4;
constexpr std::uint8_t kIn12 = 6;
using D = Differentiability;

// clang-format off
constexpr DerivativeRule kRules[] = {
    {OpKind::AddInplace, D::Rule, 0, 0, false, add_inplace_backward},
    {OpKind::MulInplace, D::Rule, kIn0 | kIn1, 0, true, mul_inplace_backward, {kIn1, kIn0}},
    {OpKind::Addcmul, D::Rule, kIn12, 0, false, addcmul_backward, {0, kIn2, kIn1}},
    {OpKind::Addcdiv, D::Rule, kIn12, 0, false, addcdiv_backward},
    {OpKind::Lerp, D::Rule, kIn0 | kIn12, 0, true, lerp_backward},
    {OpKind::Fill, D::Rule, 0, 0, false, overwrite_backward},
    {OpKind::Copy, D::Rule, 0, 0, false, copy_backward},
    {OpKind::Uniform, D::Rule, 0, 0, false, overwrite_backward},
    {OpKind::Normal, D::Rule, 0, 0, false, overwrite_backward},
    // The fused optimizer updates (ops/optim.h) run under NoGradGuard: an optimizer step is not
    // part of any graph, so they have no derivative and refuse to be recorded.
    {OpKind::SgdStep, D::NoRule}, {OpKind::AdamwStep, D::NoRule},
    {OpKind::UnscaleGrads, D::NoRule}, {OpKind::UpdateScale, D::NoRule},
    // Collectives (ops/collective.h) reduce gradients explicitly under NoGradGuard
    // (DistributedDataParallel); they are not differentiated through.
    {OpKind::AllReduce, D::NoRule}, {OpKind::Broadcast, D::NoRule},
    {OpKind::AllGather, D::NoRule},
};
// clang-format on

}  // namespace

std::span<const DerivativeRule> inplace_rules() {
  return kRules;
}

}  // namespace grove::autograd
