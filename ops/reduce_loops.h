// How a reduction walks its input, shared by the CPU and CUDA kernels (ops/cpu/reduce.cpp,
// ops/cuda/reduce.cu): the input's dims split into kept dims (one output element per position)
// and reduced dims (the elements folded into it), each as a StridedLoop. Host code only.
#pragma once

#include <cstdint>

#include "core/strided_loop.h"
#include "ops/dispatch.h"

namespace grove::ops {

// Trivially copyable, so CPU kernels may capture it and CUDA kernels may take it by value.
struct ReduceLoops {
  StridedLoop<2> outer;  // kept dims: operand 0 the output, operand 1 the input
  StridedLoop<1> inner;  // reduced dims: the input
  std::int64_t count;    // elements folded into each output
  std::int64_t outputs;  // output elements
};

// The loops of a reduction call (ReduceAttributes::dims: empty for all; checked by infer;
// the output is contiguous). `sort_inner`: order the reduced dims by decreasing stride, so the
// innermost run is the densest (sums do not care about order; max and argmax keep row-major
// order to report positions).
ReduceLoops make_reduce_loops(const OpCall& call, bool sort_inner);

}  // namespace grove::ops
