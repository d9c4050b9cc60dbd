// StridedLoop: how CPU kernels walk tensors of any strides.
//
// A kernel over N operands of the same sizes (broadcast operands have stride 0) builds a
// StridedLoop once, on the host, and captures it by value: it is trivially copyable, as recorded
// kernels must be (Note [CPU streams simulate CUDA capture] in stream.h). make_loop drops size-1
// dimensions and merges neighbours that are contiguous in every operand, so dense tensors become
// one long run; for_each_run then calls the kernel body once per innermost run.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/array_ref.h"
#include "core/error.h"

namespace grove {

// Kernels iterate over at most this many dimensions after merging contiguous ones.
inline constexpr int kMaxKernelDims = 12;

// Sizes and per-operand strides (in elements), trivially copyable so kernels can record it.
template <int kOperands>
struct StridedLoop {
  int ndim = 0;
  std::int64_t sizes[kMaxKernelDims] = {};
  std::int64_t strides[kOperands][kMaxKernelDims] = {};

  std::int64_t numel() const {
    std::int64_t n = 1;
    for (int d = 0; d < ndim; ++d) n *= sizes[d];
    return n;
  }
};

// Builds the loop, dropping size-1 dims and merging dims that are contiguous in all operands.
template <int kOperands>
StridedLoop<kOperands> make_loop(IntArrayRef sizes, const IntArrayRef (&strides)[kOperands],
                                 const char* op) {
  DimVector merged_sizes;
  DimVector merged_strides[kOperands];
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 1) continue;
    bool can_merge = !merged_sizes.empty();
    for (int k = 0; k < kOperands && can_merge; ++k) {
      can_merge = merged_strides[k].back() == strides[k][d] * sizes[d];
    }
    if (can_merge) {
      merged_sizes[merged_sizes.size() - 1] *= sizes[d];
      for (int k = 0; k < kOperands; ++k) {
        merged_strides[k][merged_strides[k].size() - 1] = strides[k][d];
      }
    } else {
      merged_sizes.push_back(sizes[d]);
      for (int k = 0; k < kOperands; ++k) merged_strides[k].push_back(strides[k][d]);
    }
  }
  GROVE_CHECK(merged_sizes.size() <= static_cast<std::size_t>(kMaxKernelDims), op,
              ": tensors with more than ", kMaxKernelDims,
              " non-mergeable dimensions are not supported (got sizes ", sizes,
              "); make the tensor contiguous or merge dimensions with view()");
  StridedLoop<kOperands> loop;
  loop.ndim = static_cast<int>(merged_sizes.size());
  for (int d = 0; d < loop.ndim; ++d) {
    loop.sizes[d] = merged_sizes[d];
    for (int k = 0; k < kOperands; ++k) loop.strides[k][d] = merged_strides[k][d];
  }
  if (loop.ndim == 0) {  // a single element
    loop.ndim = 1;
    loop.sizes[0] = 1;
  }
  return loop;
}

// Calls body(offsets, length) once per innermost run: offsets[k] is operand k's offset (in
// elements) of the run's first element; the run's stride for operand k is
// loop.strides[k][loop.ndim - 1].
template <int kOperands, typename Body>
void for_each_run(const StridedLoop<kOperands>& loop, Body body) {
  const int last = loop.ndim - 1;
  std::int64_t index[kMaxKernelDims] = {};
  std::int64_t offsets[kOperands] = {};
  const std::int64_t outer = loop.numel() / std::max<std::int64_t>(loop.sizes[last], 1);
  if (loop.sizes[last] == 0) return;
  for (std::int64_t run = 0; run < outer; ++run) {
    body(offsets, loop.sizes[last]);
    // Advance the odometer over dims [0, last).
    for (int d = last - 1; d >= 0; --d) {
      ++index[d];
      for (int k = 0; k < kOperands; ++k) offsets[k] += loop.strides[k][d];
      if (index[d] < loop.sizes[d]) break;
      for (int k = 0; k < kOperands; ++k) offsets[k] -= loop.strides[k][d] * loop.sizes[d];
      index[d] = 0;
    }
  }
}

}  // namespace grove
