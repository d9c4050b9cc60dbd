// The (N, C) scores and (N) targets of cross_entropy, nll_loss and their backward ops as raw
// pointers and strides: what both the CPU kernels (ops/cpu/loss.cpp) and the CUDA kernels
// (ops/cuda/loss.cu) read, unpacked from the OpCall in one place. Each device's kernels add what
// only they need (the CPU's dtype for error messages, the GPU's device error site) by deriving
// from LossLayout. Plain C++: the CUDA kernels take it by value.
#pragma once

#include <cstdint>

#include "ops/attributes.h"
#include "ops/dispatch.h"

namespace grove::ops {

template <typename T>
struct LossLayout {
  const T* scores;
  std::int64_t rows, classes, row_stride, class_stride;
  const std::int64_t* targets;
  std::int64_t target_stride, ignore_index;
};

// scores: (N, C) and targets: (N) int64, inputs of `call` (0 and 1 for the losses, 1 and 2 for
// their gradients, after grad); ignore_index from its LossAttributes.
template <typename T>
LossLayout<T> loss_layout(const OpCall& call, const Tensor& scores, const Tensor& targets) {
  return {static_cast<const T*>(scores.data_ptr()),
          scores.size(0),
          scores.size(1),
          scores.stride(0),
          scores.stride(1),
          static_cast<const std::int64_t*>(targets.data_ptr()),
          targets.stride(0),
          LossAttributes::from(call.attributes).ignore_index};
}

}  // namespace grove::ops
