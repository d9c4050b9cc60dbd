// A few float32 ops for the graph-tree tests, and the device the scenarios run on.
//
// The scenarios are compiled twice (tests/graphs/CMakeLists.txt): graphs_tests runs them on the
// CPU, graphs_cuda_tests (built with GROVE_GRAPHS_TEST_CUDA) on cuda(0). On the CPU the ops are
// written with core kernels only (the ops layer is not needed to exercise the manager); on a
// CUDA device they are the real ops of ops/elementwise.h and ops/inplace.h. Either way each op
// allocates its output on the current stream and launches its kernel there, so it is recorded
// while that stream captures, like any op.
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

inline void check_float32_contiguous(const Tensor& tensor, const char* op) {
  GROVE_CHECK(tensor.dtype() == DType::Float32 && tensor.is_contiguous(), op,
              ": the test ops take contiguous float32 tensors");
}

// out = a + b (same shapes)
inline Tensor add(const Tensor& a, const Tensor& b) {
  check_float32_contiguous(a, "add");
  check_float32_contiguous(b, "add");
  GROVE_CHECK(a.sizes() == b.sizes(), "add: shapes differ");
  if (!a.device().is_cpu()) return ops::add(a, b);
  Tensor out = empty(a.sizes());
  const float* x = a.data<float>();
  const float* y = b.data<float>();
  float* z = out.data<float>();
  const std::int64_t n = a.numel();
  launch_cpu(current_stream(kCPU), [=] {
    for (std::int64_t i = 0; i < n; ++i) z[i] = x[i] + y[i];
  });
  return out;
}

// out = a * factor
inline Tensor scale(const Tensor& a, float factor) {
  check_float32_contiguous(a, "scale");
  if (!a.device().is_cpu()) return ops::mul(a, factor);
  Tensor out = empty(a.sizes());
  const float* x = a.data<float>();
  float* z = out.data<float>();
  const std::int64_t n = a.numel();
  launch_cpu(current_stream(kCPU), [=] {
    for (std::int64_t i = 0; i < n; ++i) z[i] = x[i] * factor;
  });
  return out;
}

// a += b, in place (bumps a's version)
inline void add_(const Tensor& a, const Tensor& b) {
  check_float32_contiguous(a, "add_");
  check_float32_contiguous(b, "add_");
  if (!a.device().is_cpu()) {
    ops::add_(a, b);  // bumps the version itself
    return;
  }
  float* x = a.data<float>();
  const float* y = b.data<float>();
  const std::int64_t n = a.numel();
  launch_cpu(current_stream(kCPU), [=] {
    for (std::int64_t i = 0; i < n; ++i) x[i] += y[i];
  });
  a.bump_version();
}

}  // namespace grove::graphs::testing
