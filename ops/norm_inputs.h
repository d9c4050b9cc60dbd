// The inputs of layer_norm and rms_norm as their kernels read them, unpacked from the OpCall in
// one place for the CPU kernels (ops/cpu/layer_norm.cpp, ops/cpu/rms_norm.cpp) and the CUDA
// kernels (ops/cuda/layer_norm.cu, ops/cuda/rms_norm.cu): contiguous copies of x and the
// parameters, seen as M rows of N elements. The argument checks are ops/normalized_shape.h's.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "ops/attributes.h"
#include "ops/dispatch.h"

namespace grove::ops {

struct NormInputs {
  LayerNormAttributes attributes;
  Tensor x;            // (M, N), contiguous
  Tensor weight;       // (N), contiguous; undefined without has_weight
  Tensor bias;         // (N), contiguous; undefined without a bias (rms_norm has none)
  std::int64_t n = 0;  // N: elements per row, the product of normalized_shape
  std::int64_t m = 0;  // M: rows, one per element of the per-row statistics
};

// Inputs: x, [weight if has_weight], [bias]. outputs[1] is the first per-row statistic (mean,
// rrms). Making a non-contiguous input contiguous launches a copy on its device's current stream;
// nothing synchronises.
NormInputs norm_inputs(const OpCall& call, const OpOutputs& outputs);

// The backward ops' inputs, likewise.
struct NormBackwardInputs {
  LayerNormAttributes attributes;
  Tensor grad;                  // (M, N), contiguous
  Tensor x;                     // (M, N), contiguous
  std::array<Tensor, 2> stats;  // (M), contiguous: layer_norm's mean and rstd; rms_norm's rrms
  Tensor weight;                // (N), contiguous; undefined without has_weight
  std::int64_t n = 0;           // N: elements per row
  std::int64_t m = 0;           // M: rows
};

// Inputs: grad, x, the op's `statistics` per-row statistics (2 for layer_norm_backward, 1 for
// rms_norm_backward), [weight if has_weight].
NormBackwardInputs norm_backward_inputs(const OpCall& call, std::size_t statistics);

}  // namespace grove::ops
