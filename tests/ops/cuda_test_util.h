// Helpers shared by the CUDA parity tests (tests/ops/cuda_*_test.cpp): the skip without a device,
// inputs with ties and NaNs, the CPU-versus-GPU comparison, and the layouts they loop over.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/tensor.h"
#include "tests/ops/op_test_util.h"

// Every GPU test starts with this: without a device the test is skipped, not failed.
#define SKIP_WITHOUT_GPU() \
  if (!::grove::cuda_is_available()) GTEST_SKIP() << "no CUDA device"

namespace grove::ops::testing {

inline const Device kGpu = cuda(0);
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Random values of `dtype`: floats are multiples of 1/4 in [-3, 3] (ties and exact zeros occur,
// and sums in double are exact) with a NaN at every element i where i % nan_every == 5 %
// nan_every (nan_every 0: none); integers in [-6, 6); bools half true.
inline Tensor random_quarters(IntArrayRef sizes, DType dtype, unsigned seed, int nan_every = 0) {
  std::mt19937 engine(seed);
  std::uniform_int_distribution<int> quarter(-12, 12);
  std::vector<double> values(static_cast<std::size_t>(product(sizes)));
  const auto period = static_cast<std::size_t>(nan_every);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const int q = quarter(engine);
    switch (dtype) {
      case DType::Float32:
      case DType::Float64:
      case DType::BFloat16:
      case DType::Float16:
        values[i] = period > 0 && i % period == 5 % period ? kNaN : q / 4.0;
        break;
      case DType::Int64:
      case DType::Int32:
        values[i] = q / 2;
        break;
      case DType::Bool:
        values[i] = q % 2 == 0 ? 1.0 : 0.0;
        break;
    }
  }
  return from_vector(values).reshape(sizes).to(dtype);
}

// Relative and absolute tolerances per floating dtype; integer and bool results must be exact.
struct ParityTolerances {
  double float32_rtol, float32_atol;
  double float64_rtol, float64_atol;
  // > 0: bfloat16 results are compared as a whole, ||gpu - cpu|| / ||cpu|| (2-norms, NaN
  // matching NaN) at most this, and float16 results at most an eighth of it (three more
  // mantissa bits). For kernels that round intermediate values to the 16-bit dtype (cuDNN's
  // fused attention rounds the probabilities before they multiply v), where single elements
  // near zero carry the rounding of large terms that cancel.
  double reduced_norm_rtol = 0.0;
};

// ||actual - expected|| / ||expected|| over the elements, NaN required where expected is NaN.
inline void expect_norm_close(const Tensor& actual, const std::vector<double>& expected,
                              double bound, const std::string& what) {
  const std::vector<double> got = elements(actual);
  ASSERT_EQ(got.size(), expected.size()) << what;
  double error = 0.0, norm = 0.0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << " element " << i << " should be NaN";
      continue;
    }
    error += (got[i] - expected[i]) * (got[i] - expected[i]);
    norm += expected[i] * expected[i];
  }
  const double relative = norm > 0 ? std::sqrt(error / norm) : std::sqrt(error);
  EXPECT_LE(relative, bound) << what << ": relative 2-norm error";
}

// gpu_result (on the GPU) must equal cpu_result (the CPU kernel's) in dtype and shape, and in
// value within `tolerances`.
inline void expect_device_parity(const Tensor& cpu_result, const Tensor& gpu_result,
                                 const std::string& what, const ParityTolerances& tolerances) {
  ASSERT_TRUE(gpu_result.device().is_cuda()) << what;
  ASSERT_EQ(gpu_result.dtype(), cpu_result.dtype()) << what;
  ASSERT_EQ(gpu_result.sizes(), cpu_result.sizes()) << what;
  const Tensor back = gpu_result.to(kCPU);
  const std::vector<double> expected = elements(cpu_result);
  switch (cpu_result.dtype()) {
    case DType::Float32:
      return expect_close(back, expected, tolerances.float32_rtol, tolerances.float32_atol, what);
    case DType::Float64:
      return expect_close(back, expected, tolerances.float64_rtol, tolerances.float64_atol, what);
    case DType::BFloat16:
    case DType::Float16: {
      // Both devices compute in float32 and round once (Note [Reduced-precision compute]):
      // float32 results a few ulps apart may round to neighbouring 16-bit values, one 16-bit
      // ulp (epsilon 2^-7 for bfloat16, 2^-10 for float16) on top of the float32 tolerance.
      const bool bfloat = cpu_result.dtype() == DType::BFloat16;
      if (tolerances.reduced_norm_rtol > 0) {
        return expect_norm_close(back, expected,
                                 tolerances.reduced_norm_rtol / (bfloat ? 1.0 : 8.0), what);
      }
      const double epsilon = bfloat ? 0x1p-7 : 0x1p-10;
      return expect_close(back, expected, tolerances.float32_rtol + epsilon,
                          tolerances.float32_atol, what);
    }
    default:
      return expect_close(back, expected, 0.0, 0.0, what);
  }
}

// The values of `t` on the GPU, read through a stride-3 view (a slice of a larger buffer):
// to(kGpu) alone would give a contiguous copy.
inline Tensor strided_on_gpu(const Tensor& t) {
  if (t.dim() == 0) return t.to(kGpu);
  DimVector big_sizes(t.sizes());
  big_sizes[big_sizes.size() - 1] = std::max<std::int64_t>(1, big_sizes.back() * 3);
  const Tensor big = zeros(big_sizes, TensorOptions(t.dtype()).device(kGpu));
  const Tensor view = big.slice(-1, 1, big_sizes.back(), 3);
  view.copy_(t.to(kGpu));
  return view;
}

// A layout: a base tensor of `base` sizes, made on each device, and the view taken of it.
struct Layout {
  std::string name;
  DimVector base;
  std::function<Tensor(const Tensor&)> view;
};

}  // namespace grove::ops::testing
