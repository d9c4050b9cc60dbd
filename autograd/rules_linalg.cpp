// Derivative rules of matmul, linear and bmm (ops/linalg.h). Batch dims that matmul broadcast
// come back summed by OpNode (sum_to).
#include "autograd/rules_helpers.h"
#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "ops/reduce.h"

namespace grove::autograd {
namespace {

using namespace grove::ops;

Tensor transposed(const Tensor& matrix) {
  return matrix.transpose(-1, -2);
}

// C = A B:  dA = g B^T, dB = A^T g. A 1-d operand is a row (A) or column (B) vector that
// matmul removes from the result; put it back, multiply, and take it out of the gradient.
GROVE_BACKWARD(matmul) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  const Tensor& g = ctx.grad;
  if (a.dim() == 1 && b.dim() == 1) {  // dot product: g is 0-d
    if (ctx.needs(0)) grads[0] = mul(b, g);
    if (ctx.needs(1)) grads[1] = mul(a, g);
    return;
  }
  const Tensor a2 = a.dim() == 1 ? a.unsqueeze(0) : a;   // (..., M, K)
  const Tensor b2 = b.dim() == 1 ? b.unsqueeze(-1) : b;  // (..., K, N)
  Tensor g2 = a.dim() == 1 ? g.unsqueeze(-2) : g;        // (..., M, N)
  if (b.dim() == 1) g2 = g2.unsqueeze(-1);
  if (ctx.needs(0)) {
    Tensor grad = matmul(g2, transposed(b2));  // (..., M, K)
    grads[0] = a.dim() == 1 ? grad.squeeze(-2) : grad;
  }
  if (ctx.needs(1)) {
    Tensor grad = matmul(transposed(a2), g2);  // (..., K, N)
    grads[1] = b.dim() == 1 ? grad.squeeze(-1) : grad;
  }
}

// y = x W^T + b:  dx = g W, dW = g^T x (over every row of the batch), db = sum of g's rows
GROVE_BACKWARD(linear) {
  const Tensor& weight = ctx.input(1);
  const std::int64_t out_features = weight.size(0);
  if (ctx.needs(0)) grads[0] = matmul(ctx.grad, weight);
  const Tensor rows = ctx.grad.reshape({-1, out_features});  // (B, out)
  if (ctx.needs(1)) {
    grads[1] = matmul(transposed(rows), ctx.input(0).reshape({-1, weight.size(1)}));
  }
  if (ctx.needs(2)) grads[2] = sum(rows, {0});
}

// C = A B per batch:  dA = g B^T, dB = A^T g
GROVE_BACKWARD(bmm) {
  if (ctx.needs(0)) grads[0] = bmm(ctx.grad, transposed(ctx.input(1)));
  if (ctx.needs(1)) grads[1] = bmm(transposed(ctx.input(0)), ctx.grad);
}

constexpr std::uint8_t kIn01 = 3;
using D = Differentiability;

constexpr DerivativeRule kRules[] = {
    {OpKind::Matmul, D::Rule, kIn01, 0, false, matmul_backward},
    {OpKind::Linear, D::Rule, kIn01, 0, false, linear_backward},
    {OpKind::Bmm, D::Rule, kIn01, 0, false, bmm_backward},
};

}  // namespace

std::span<const DerivativeRule> linalg_rules() {
  return kRules;
}

}  // namespace grove::autograd
