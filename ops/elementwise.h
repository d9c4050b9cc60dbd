// Elementwise ops: arithmetic and comparisons with NumPy-style broadcasting, selection, and
// unary math. All return new tensors (contiguous, on the inputs' device).
//
// Dtypes: the two tensor operands must have the same dtype (convert one with to(dtype); there is
// no implicit promotion). Arithmetic works on float32, float64, int64 and int32; div and the
// unary math functions (exp, log, sqrt, rsqrt, pow, tanh, sigmoid, gelu) on floating dtypes;
// comparisons on every dtype and return bool. A scalar operand takes the tensor's dtype (a
// floating-point scalar with an integer tensor is an error, not a silent truncation).
#pragma once

#include "core/tensor.h"

namespace grove::ops {

Tensor add(const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, const Scalar& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Scalar& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Scalar& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Scalar& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);

Tensor eq(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Scalar& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Scalar& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Scalar& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Scalar& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Scalar& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Scalar& b);

// condition ? a : b, elementwise; condition is bool; all three broadcast together.
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);
// x with `value` where mask is true; mask is bool and broadcasts to x's shape.
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value);
// min(max(x, low), high); use -infinity / infinity for a missing bound.
Tensor clamp(const Tensor& x, double low, double high);

Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor pow(const Tensor& x, double exponent);
Tensor abs(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
// approximate: false -> 0.5 x (1 + erf(x / sqrt 2)); true -> the tanh approximation.
Tensor gelu(const Tensor& x, bool approximate = false);

// Derivatives of unary ops, for autograd's rules: grad * d gelu(x) / dx, elementwise.
//   exact:       d/dx [x Phi(x)] = Phi(x) + x phi(x), with Phi(x) = (1 + erf(x / sqrt 2)) / 2 and
//                phi(x) = exp(-x^2 / 2) / sqrt(2 pi);
//   approximate: y = x (1 + tanh u) / 2 with u = sqrt(2 / pi) (x + 0.044715 x^3), so
//                dy/dx = (1 + tanh u) / 2 + x (1 - tanh^2 u) sqrt(2 / pi) (1 + 3 0.044715 x^2) / 2.
// grad and x: one shape (no broadcasting) and one floating dtype.
Tensor gelu_backward(const Tensor& grad, const Tensor& x, bool approximate = false);
// grad where y = relu(x) is positive, else 0: relu's derivative (0 at x == 0, as in PyTorch),
// from its output. A NaN y passes grad through (NaN <= 0 is false), as masked_fill(grad, y <= 0,
// 0) did, which it replaces: one pass over grad and y instead of a comparison and a fill.
// grad and y: one shape (no broadcasting) and one floating dtype.
Tensor relu_backward(const Tensor& grad, const Tensor& y);

}  // namespace grove::ops

namespace grove {

// Operators for readable model code: a + b, a * 2, -a, ...
inline Tensor operator+(const Tensor& a, const Tensor& b) {
  return ops::add(a, b);
}
inline Tensor operator+(const Tensor& a, const Scalar& b) {
  return ops::add(a, b);
}
inline Tensor operator-(const Tensor& a, const Tensor& b) {
  return ops::sub(a, b);
}
inline Tensor operator-(const Tensor& a, const Scalar& b) {
  return ops::sub(a, b);
}
inline Tensor operator*(const Tensor& a, const Tensor& b) {
  return ops::mul(a, b);
}
inline Tensor operator*(const Tensor& a, const Scalar& b) {
  return ops::mul(a, b);
}
inline Tensor operator/(const Tensor& a, const Tensor& b) {
  return ops::div(a, b);
}
inline Tensor operator/(const Tensor& a, const Scalar& b) {
  return ops::div(a, b);
}
inline Tensor operator-(const Tensor& a) {
  return ops::neg(a);
}

}  // namespace grove
