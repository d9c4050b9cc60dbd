// In-place updates, the building blocks of optimizer steps and initialisers. Each writes into its
// first argument x and returns it; each goes through dispatch() as an in-place op, so it bumps
// x's version counter (Note [Views, aliasing and version counters] in core/tensor_impl.h) and
// refuses an expanded x (stride-0 dims: several elements share one memory location).
//
// Operands broadcast to x's shape, never the other way: an in-place op cannot grow x. Tensor
// operands must have x's dtype (no implicit promotion; copy_ is the exception and converts).
// A scalar must fit x's dtype: a floating-point scalar with an integer x is an error.
// An operand that overlaps x in memory other than element for element (x.add_(x) is fine;
// x.add_(x.select(0, 0)) is not) is copied first, so results never depend on update order.
//
// Dtypes: add_, mul_, addcmul_ work on float32, float64, int64 and int32; addcdiv_, lerp_,
// uniform_ and normal_ need floating-point x; fill_, zero_ and copy_ take every dtype.
// Nothing here synchronises the host.
#pragma once

#include "core/rng.h"
#include "core/tensor.h"

namespace grove::ops {

// x += alpha * y
const Tensor& add_(const Tensor& x, const Tensor& y, const Scalar& alpha = 1);
// x *= y, x *= value
const Tensor& mul_(const Tensor& x, const Tensor& y);
const Tensor& mul_(const Tensor& x, const Scalar& value);
// x += value * a * b
const Tensor& addcmul_(const Tensor& x, const Tensor& a, const Tensor& b, const Scalar& value = 1);
// x += value * a / b
const Tensor& addcdiv_(const Tensor& x, const Tensor& a, const Tensor& b, const Scalar& value = 1);
// x += weight * (end - x), computed as end - (end - x) * (1 - weight) when weight >= 0.5 so that
// weight 1 gives end exactly (as PyTorch). The tensor form reads weight per element
// (broadcast to x), which lets a captured optimizer step take its coefficients from device memory.
const Tensor& lerp_(const Tensor& x, const Tensor& end, double weight);
const Tensor& lerp_(const Tensor& x, const Tensor& end, const Tensor& weight);

// x[i] = value; zero_ is fill_ with 0.
const Tensor& fill_(const Tensor& x, const Scalar& value);
const Tensor& zero_(const Tensor& x);
// x[i] = convert(src[i]); src broadcasts to x's shape and may have any dtype.
const Tensor& copy_(const Tensor& x, const Tensor& src);

// x[i] = low + (high - low) * U[0, 1) (low <= high, both finite), and x[i] = mean + std * N(0, 1)
// (std >= 0). Values come from the generator (null: x's device's default one) exactly as rand and
// randn draw them (ops/random.h), so uniform_(x, 0, 1) after a seed equals rand after that seed.
const Tensor& uniform_(const Tensor& x, double low = 0.0, double high = 1.0,
                       Generator* generator = nullptr);
const Tensor& normal_(const Tensor& x, double mean = 0.0, double std = 1.0,
                      Generator* generator = nullptr);

}  // namespace grove::ops
