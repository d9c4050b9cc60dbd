// Helpers for op tests: random inputs in several layouts, a naive strided reader in double,
// comparisons with tolerances, and central differences for the backward ops. References in op
// tests are plain loops in double over these helpers, never grove ops or Eigen, so that they
// check the kernels independently; central differences check a backward op against its forward
// op (already checked against its own reference), so that the pair is consistent.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace grove::ops::testing {

// Tolerances: float32 kernels may reorder sums and use vectorised math functions; 1e-5 relative
// is a few ulps of float32 for the values these tests produce. float64 is held to 1e-12.
inline double relative_tolerance(DType dtype) {
  return dtype == DType::Float32 ? 1e-5 : 1e-12;
}

// Uniform values in [low, high), deterministic per seed.
inline Tensor random_tensor(IntArrayRef sizes, DType dtype = DType::Float32, double low = -2.0,
                            double high = 2.0, unsigned seed = 1) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<double> distribution(low, high);
  std::vector<double> values(static_cast<std::size_t>(product(sizes)));
  for (double& value : values) value = distribution(engine);
  return from_vector(values).reshape(sizes).to(dtype);
}

// Random integers in [low, high).
inline Tensor random_integers(IntArrayRef sizes, std::int64_t low, std::int64_t high,
                              unsigned seed = 1) {
  std::mt19937 engine(seed);
  std::uniform_int_distribution<std::int64_t> distribution(low, high - 1);
  std::vector<std::int64_t> values(static_cast<std::size_t>(product(sizes)));
  for (std::int64_t& value : values) value = distribution(engine);
  return from_vector(values).reshape(sizes);
}

// The same values as `tensor`, laid out non-contiguously: a strided slice of a larger buffer
// whose last dimension is three times as long.
inline Tensor non_contiguous(const Tensor& tensor) {
  if (tensor.dim() == 0) return tensor.clone();
  DimVector big_sizes(tensor.sizes());
  big_sizes[big_sizes.size() - 1] = std::max<std::int64_t>(1, big_sizes.back() * 3);
  Tensor big = zeros(big_sizes, TensorOptions(tensor.dtype()));
  Tensor view = big.slice(-1, 1, big_sizes.back(), 3);
  view.copy_(tensor);
  EXPECT_TRUE(!view.is_contiguous() || tensor.numel() <= 1 || tensor.sizes().back() <= 1);
  return view;
}

// Element `index` (a flat row-major index into the tensor's shape) read through its strides.
inline double element(const Tensor& tensor, std::int64_t flat_index) {
  std::int64_t offset = tensor.storage_offset();
  for (std::int64_t d = tensor.dim() - 1; d >= 0; --d) {
    const std::int64_t size = tensor.sizes()[static_cast<std::size_t>(d)];
    offset += (flat_index % size) * tensor.strides()[static_cast<std::size_t>(d)];
    flat_index /= size;
  }
  const void* base = tensor.storage()->data();
  switch (tensor.dtype()) {
    case DType::Float32:
      return static_cast<const float*>(base)[offset];
    case DType::Float64:
      return static_cast<const double*>(base)[offset];
    case DType::Int64:
      return static_cast<double>(static_cast<const std::int64_t*>(base)[offset]);
    case DType::Int32:
      return static_cast<const std::int32_t*>(base)[offset];
    case DType::Bool:
      return static_cast<const bool*>(base)[offset] ? 1.0 : 0.0;
    case DType::BFloat16:
      return static_cast<float>(static_cast<const BFloat16*>(base)[offset]);
    case DType::Float16:
      return static_cast<float>(static_cast<const Float16*>(base)[offset]);
  }
  return 0.0;
}

// All elements in row-major order, as doubles, read through the strides.
inline std::vector<double> elements(const Tensor& tensor) {
  std::vector<double> values(static_cast<std::size_t>(tensor.numel()));
  for (std::size_t i = 0; i < values.size(); ++i) {
    values[i] = element(tensor, static_cast<std::int64_t>(i));
  }
  return values;
}

// The flat index into a tensor of `sizes` that broadcasts to `out_sizes`, for output element i.
inline std::int64_t broadcast_index(IntArrayRef sizes, IntArrayRef out_sizes, std::int64_t i) {
  std::int64_t index = 0;
  std::int64_t stride = 1;
  for (std::int64_t d = static_cast<std::int64_t>(out_sizes.size()) - 1; d >= 0; --d) {
    const std::int64_t out_size = out_sizes[static_cast<std::size_t>(d)];
    const std::int64_t coordinate = i % out_size;
    i /= out_size;
    const std::int64_t in_d = d - static_cast<std::int64_t>(out_sizes.size() - sizes.size());
    if (in_d < 0) continue;
    const std::int64_t size = sizes[static_cast<std::size_t>(in_d)];
    index += (size == 1 ? 0 : coordinate) * stride;
    stride *= size;
  }
  return index;
}

// Checks every element within rtol (relative, with `atol` as a floor for values near zero);
// NaN must match NaN and infinities must match exactly. Reports the worst element.
inline void expect_close(const Tensor& actual, const std::vector<double>& expected, double rtol,
                         double atol = 0.0, const std::string& what = "") {
  ASSERT_EQ(static_cast<std::size_t>(actual.numel()), expected.size()) << what;
  const std::vector<double> got = elements(actual);
  double worst = 0.0;
  std::size_t worst_index = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(expected[i]) || std::isinf(expected[i])) {
      EXPECT_TRUE(std::isnan(expected[i]) ? std::isnan(got[i]) : got[i] == expected[i])
          << what << " element " << i << ": got " << got[i] << ", expected " << expected[i];
      continue;
    }
    const double error = std::abs(got[i] - expected[i]) /
                         std::max(std::abs(expected[i]), atol > 0 ? atol / rtol : 1e-300);
    if (!(error <= worst)) {
      worst = error;
      worst_index = i;
    }
  }
  EXPECT_LE(worst, rtol) << what << ": worst element " << worst_index << ": got "
                         << got[worst_index] << ", expected " << expected[worst_index];
}

// Central differences (a gradcheck): the derivative of S(x) = sum(weights * forward(x)) with
// respect to each element of a float64 x, in row-major order,
//   (S(x + h e_k) - S(x - h e_k)) / 2h,  h = 1e-6,
// with the sum taken in double. A backward op computes the same vector as one tensor.
inline std::vector<double> numeric_gradient(const std::function<Tensor(const Tensor&)>& forward,
                                            const Tensor& x, const Tensor& weights) {
  constexpr double kStep = 1e-6;
  EXPECT_EQ(x.dtype(), DType::Float64) << "central differences need float64";
  const std::vector<double> w = elements(weights);
  const auto weighted_sum = [&](const std::vector<double>& values) {
    const std::vector<double> y = elements(forward(from_vector(values).reshape(x.sizes())));
    EXPECT_EQ(y.size(), w.size()) << "weights must have the forward's output shape";
    double sum = 0.0;
    for (std::size_t i = 0; i < y.size() && i < w.size(); ++i) sum += w[i] * y[i];
    return sum;
  };
  std::vector<double> values = elements(x);
  std::vector<double> gradient(values.size());
  for (std::size_t k = 0; k < values.size(); ++k) {
    const double saved = values[k];
    values[k] = saved + kStep;
    const double plus = weighted_sum(values);
    values[k] = saved - kStep;
    const double minus = weighted_sum(values);
    values[k] = saved;
    gradient[k] = (plus - minus) / (2 * kStep);
  }
  return gradient;
}

// Tolerance (relative, and absolute below 1) for a float64 backward op against
// numeric_gradient: the quotient's truncation error is about h^2 |f'''| / 6 ~ 1e-12 for the
// smooth functions here, and its rounding error about eps |S| / h = 2.2e-16 |S| / 1e-6, under
// 1e-8 for the |S| < 50 of these tests. 1e-6 leaves a margin of 100 and still catches any
// wrong or missing term (errors of order 1e-2 and up).
inline constexpr double kFiniteDifferenceTolerance = 1e-6;

// Checks `analytic` (a backward op's result) against numeric_gradient(forward, x, weights).
inline void expect_gradient(const Tensor& analytic,
                            const std::function<Tensor(const Tensor&)>& forward, const Tensor& x,
                            const Tensor& weights, const std::string& what) {
  ASSERT_EQ(analytic.sizes(), x.sizes()) << what;
  expect_close(analytic, numeric_gradient(forward, x, weights), kFiniteDifferenceTolerance,
               kFiniteDifferenceTolerance, what + " (central differences)");
}

// Test names for parameters (Case, DType) where Case has a `name`: "exp_float32".
struct CaseAndDtypeName {
  template <typename Info>
  std::string operator()(const Info& info) const {
    return std::string(std::get<0>(info.param).name) + "_" +
           std::string(dtype_name(std::get<1>(info.param)));
  }
};

// The message of the grove::Error thrown by `body` ("" if none).
inline std::string error_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

}  // namespace grove::ops::testing
