// A few float32 ops for the graph-tree tests, written with core kernels only (the ops layer is
// not needed to exercise the manager). Each allocates its output on the current stream and
// launches its kernel there, so it is recorded while that stream captures, like a real op.
#pragma once

#include "core/stream.h"
#include "core/tensor.h"

namespace grove::graphs::testing {

inline void check_float32_contiguous(const Tensor& tensor, const char* op) {
  GROVE_CHECK(tensor.dtype() == DType::Float32 && tensor.is_contiguous(), op,
              ": the test ops take contiguous float32 tensors");
}

// out = a + b (same shapes)
inline Tensor add(const Tensor& a, const Tensor& b) {
  check_float32_contiguous(a, "add");
  check_float32_contiguous(b, "add");
  GROVE_CHECK(a.sizes() == b.sizes(), "add: shapes differ");
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
  float* x = a.data<float>();
  const float* y = b.data<float>();
  const std::int64_t n = a.numel();
  launch_cpu(current_stream(kCPU), [=] {
    for (std::int64_t i = 0; i < n; ++i) x[i] += y[i];
  });
  a.bump_version();
}

}  // namespace grove::graphs::testing
