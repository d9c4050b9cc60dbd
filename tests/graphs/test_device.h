// The device the graph-tree scenarios run on.
//
// The scenarios are compiled twice (tests/graphs/CMakeLists.txt): graphs_tests runs them on the
// CPU, graphs_cuda_tests (built with GROVE_GRAPHS_TEST_CUDA) on cuda(0). On both they call the
// real ops (ops/elementwise.h, ops/inplace.h), which allocate their outputs on the current
// stream and launch their kernels there, so they are recorded while that stream captures.
#pragma once

#include "core/stream.h"
#include "core/tensor.h"
#include "ops/elementwise.h"
#include "ops/inplace.h"

namespace grove::graphs::testing {

#ifdef GROVE_GRAPHS_TEST_CUDA
inline const Device kTestDevice = cuda(0);
#else
inline const Device kTestDevice = kCPU;
#endif

}  // namespace grove::graphs::testing
