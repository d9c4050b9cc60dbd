// Shape ops. Some copy (cat, stack, tril, triu, one_hot: new contiguous tensors, through
// dispatch); the others are views that share the input's storage and launch no kernel (split,
// chunk; flatten is a view when the strides allow, like reshape, and a copy otherwise).
//
// Dims may be negative (counted from the end). cat's tensors need one dtype and one device; there
// is no promotion.
#pragma once

#include <initializer_list>
#include <span>
#include <vector>

#include "core/tensor.h"

namespace grove::ops {

// Joins tensors along an existing dim; all sizes but dim's must agree. At least one tensor.
Tensor cat(std::span<const Tensor> tensors, std::int64_t dim = 0);
Tensor cat(std::initializer_list<Tensor> tensors, std::int64_t dim = 0);
// Joins tensors of one shape along a new dim (unsqueeze each at dim, then cat).
Tensor stack(std::span<const Tensor> tensors, std::int64_t dim = 0);
Tensor stack(std::initializer_list<Tensor> tensors, std::int64_t dim = 0);

// Views of consecutive pieces of split_size along dim (the last may be shorter). split_size > 0,
// or 0 when dim's size is 0.
std::vector<Tensor> split(const Tensor& x, std::int64_t split_size, std::int64_t dim = 0);
// `chunks` pieces of ceil(size / chunks) along dim, as PyTorch: there may be fewer than `chunks`
// when the size does not divide evenly (chunk of 5 into 4 gives 2, 2, 1).
std::vector<Tensor> chunk(const Tensor& x, std::int64_t chunks, std::int64_t dim = 0);
// Merges dims start_dim..end_dim into one (a 0-d tensor becomes 1-d of one element).
Tensor flatten(const Tensor& x, std::int64_t start_dim = 0, std::int64_t end_dim = -1);

// Copies of x (..., R, C) with the elements above (tril) or below (triu) the given diagonal set
// to zero: tril keeps [r, c] where c - r <= diagonal, triu where c - r >= diagonal. Any dtype.
Tensor tril(const Tensor& x, std::int64_t diagonal = 0);
Tensor triu(const Tensor& x, std::int64_t diagonal = 0);

// int64 indices (*) -> int64 (*, num_classes) with a 1 at each index. num_classes must be given
// (PyTorch's -1, "infer from the largest index", would read data on the host, which a captured
// graph cannot do). Indices outside [0, num_classes) are errors; see
// Note [Index checks during capture] in ops/embedding.h.
Tensor one_hot(const Tensor& indices, std::int64_t num_classes);

}  // namespace grove::ops
