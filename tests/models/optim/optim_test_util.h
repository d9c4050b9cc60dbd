// Shared helpers of the optimizer tests: parameters and gradients from values, values back as
// doubles, closeness checks, the message of an expected error, and a run on a fresh thread.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"
#include "tests/fresh_thread.h"

namespace grove::optim::testing {

// A leaf that requires grad holding `values` (shape `sizes`, 1-d if empty) in `dtype`.
inline Tensor parameter(const std::vector<double>& values, DType dtype = DType::Float64,
                        IntArrayRef sizes = {}) {
  return from_vector<double>(values, sizes).to(dtype).requires_grad_();
}

// Sets p's gradient to `values` (in p's dtype and shape).
inline void set_grad(const Tensor& p, const std::vector<double>& values) {
  p.set_grad(from_vector<double>(values, p.sizes()).to(p.dtype()).to(p.device()));
}

inline std::vector<double> values_of(const Tensor& t) {
  return t.detach().to(kCPU).to(DType::Float64).to_vector<double>();
}

// Every element of `got` within `tolerance` of `expected`.
inline void expect_close(const std::vector<double>& expected, const Tensor& got, double tolerance,
                         const std::string& what) {
  const std::vector<double> actual = values_of(got);
  ASSERT_EQ(expected.size(), actual.size()) << what;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(expected[i], actual[i], tolerance) << what << ", element " << i;
  }
}

// The learning rate as the float32 lr tensor holds it (what the kernels read).
inline double as_float32(double lr) {
  return static_cast<double>(static_cast<float>(lr));
}

// The message of the grove::Error thrown by `body`, or "" if none was thrown.
inline std::string error_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

// A gradient value that changes with the step and the element, in [-1, 1].
inline double gradient_value(int step, std::size_t element) {
  return std::sin(1.3 * step + 0.7 * static_cast<double>(element) + 0.2);
}

// Runs `body` on a fresh thread: a fresh tree manager for the CPU, whatever ran before.
using grove::testing::on_fresh_thread;

}  // namespace grove::optim::testing
