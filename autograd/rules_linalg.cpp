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
// A is saved only when dB is wanted, B only when dA is (see DerivativeRule::needed_by).
GROVE_BACKWARD(matmul) {
  const bool a_is_vector = ctx.inputs[0].sizes.size() == 1;
  const bool b_is_vector = ctx.inputs[1].sizes.size() == 1;
  const Tensor& g = ctx.grad;
  if (a_is_vector && b_is_vector) {  // dot product: g is 0-d
    if (ctx.needs(0)) grads[0] = mul(ctx.input(1), g);
    if (ctx.needs(1)) grads[1] = mul(ctx.input(0), g);
    return;
  }
  Tensor g2 = a_is_vector ? g.unsqueeze(-2) : g;  // (..., M, N)
  if (b_is_vector) g2 = g2.unsqueeze(-1);
  if (ctx.needs(0)) {
    const Tensor b2 = b_is_vector ? ctx.input(1).unsqueeze(-1) : ctx.input(1);  // (..., K, N)
    Tensor grad = matmul(g2, transposed(b2));                                   // (..., M, K)
    grads[0] = a_is_vector ? grad.squeeze(-2) : grad;
  }
  if (ctx.needs(1)) {
    const Tensor a2 = a_is_vector ? ctx.input(0).unsqueeze(0) : ctx.input(0);  // (..., M, K)
    Tensor grad = matmul(transposed(a2), g2);                                  // (..., K, N)
    grads[1] = b_is_vector ? grad.squeeze(-1) : grad;
  }
}

// y = x W^T + b:  dx = g W, dW = g^T x (over every row of the batch), db = sum of g's rows.
// dW and db are one op, linear_weight_grad, whose CUDA kernel sums db in the product's epilogue.
GROVE_BACKWARD(linear) {
  const IntArrayRef weight_sizes = ctx.inputs[1].sizes;  // (out, in)
  if (ctx.needs(0)) grads[0] = matmul(ctx.grad, ctx.input(1));
  const Tensor rows = ctx.grad.reshape({-1, weight_sizes[0]});  // (B, out)
  if (ctx.needs(1)) {
    std::vector<Tensor> both = linear_weight_grad(rows, ctx.input(0).reshape({-1, weight_sizes[1]}),
                                                  /*bias=*/ctx.needs(2));
    grads[1] = std::move(both[0]);
    if (ctx.needs(2)) grads[2] = std::move(both[1]);
  } else if (ctx.needs(2)) {
    grads[2] = sum(rows, {0});
  }
}

// C = A B per batch:  dA = g B^T, dB = A^T g
GROVE_BACKWARD(bmm) {
  if (ctx.needs(0)) grads[0] = bmm(ctx.grad, transposed(ctx.input(1)));
  if (ctx.needs(1)) grads[1] = bmm(transposed(ctx.input(0)), ctx.grad);
}

constexpr std::uint8_t kIn0 = 1;
constexpr std::uint8_t kIn1 = 2;
constexpr std::uint8_t kIn01 = 3;
using D = Differentiability;

// Each operand is needed only for the other one's gradient.
constexpr DerivativeRule kRules[] = {
    {OpKind::Matmul, D::Rule, kIn01, 0, false, matmul_backward, {kIn1, kIn0}},
    {OpKind::Linear, D::Rule, kIn01, 0, false, linear_backward, {kIn1, kIn0}},
    {OpKind::Bmm, D::Rule, kIn01, 0, false, bmm_backward, {kIn1, kIn0}},
    {OpKind::LinearWeightGrad, D::NoRule},
};

}  // namespace

std::span<const DerivativeRule> linalg_rules() {
  return kRules;
}

}  // namespace grove::autograd
