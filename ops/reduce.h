// Reductions: sum, mean, max, argmax and var over one or more dims (or over every element).
// All return new contiguous tensors on the input's device; none synchronises the host.
//
// Dims may be negative (counted from the end); each may appear once. An empty dims list means
// every dim, as in PyTorch. keepdim keeps each reduced dim with size 1 (so the result broadcasts
// against the input); otherwise reduced dims are removed, and a full reduction is 0-d.
//
// Dtypes: sum keeps float32, float64 and int64, and sums int32 and bool into int64 (as PyTorch).
// mean and var need floating-point inputs. max and argmax take every dtype but bool.
// Accuracy: floating-point sums (and var's two passes) accumulate in double with Kahan
// compensation, so the result does not depend on the row length beyond rounding to the dtype.
//
// Empty reductions, as in PyTorch: the sum over zero elements is 0, the mean NaN, the var NaN;
// max and argmax over zero elements are errors (there is no identity to return).
#pragma once

#include "core/tensor.h"

namespace grove::ops {

Tensor sum(const Tensor& x);  // every element -> 0-d
Tensor sum(const Tensor& x, IntArrayRef dims, bool keepdim = false);
Tensor mean(const Tensor& x);
Tensor mean(const Tensor& x, IntArrayRef dims, bool keepdim = false);

// The values of the maximum along `dim` and their positions (int64, the first position on ties;
// a NaN is the maximum, the first one wins).
struct MaxResult {
  Tensor values;
  Tensor indices;
};
MaxResult max(const Tensor& x, std::int64_t dim, bool keepdim = false);
Tensor max(const Tensor& x);  // the largest element, 0-d
// Positions of the maximum along `dim` (int64), as max(x, dim).indices.
Tensor argmax(const Tensor& x, std::int64_t dim, bool keepdim = false);
Tensor argmax(const Tensor& x);  // flat (row-major) position of the largest element, 0-d

// Variance over dims: sum((x - mean)^2) / (n - 1) when unbiased (Bessel's correction), else / n.
// NaN when the divisor is not positive (n = 1 unbiased, or n = 0). var(x, {}, false) is the
// population variance of every element. (There is deliberately no var(x, bool unbiased): a
// braced dim list such as var(x, {0}) would silently convert to it.)
Tensor var(const Tensor& x, IntArrayRef dims, bool unbiased = true, bool keepdim = false);
Tensor var(const Tensor& x);  // unbiased, over every element, 0-d

}  // namespace grove::ops
