// Helpers shared by the models/nn tests: host copies in double, closeness checks and summary
// statistics. Test code only.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"

namespace grove::nn::testing {

inline std::vector<double> values(const Tensor& tensor) {
  return tensor.to_vector<double>();
}

// Every element of `actual` within atol + rtol |expected| of `expected`, same count.
inline void expect_close(const std::vector<double>& actual, const std::vector<double>& expected,
                         double atol, double rtol = 0.0) {
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], atol + rtol * std::abs(expected[i])) << "element " << i;
  }
}

struct Stats {
  double min, max, mean, std;
};

inline Stats stats(const Tensor& tensor) {
  const std::vector<double> data = values(tensor);
  Stats out{data.front(), data.front(), 0.0, 0.0};
  for (const double value : data) {
    out.min = std::min(out.min, value);
    out.max = std::max(out.max, value);
    out.mean += value;
  }
  out.mean /= static_cast<double>(data.size());
  for (const double value : data) out.std += (value - out.mean) * (value - out.mean);
  out.std = std::sqrt(out.std / static_cast<double>(data.size()));
  return out;
}

// The message of the grove::Error that `call` throws ("" and a test failure if none).
template <class Call>
std::string error_message(Call&& call) {
  try {
    call();
  } catch (const Error& error) {
    return error.message();
  }
  ADD_FAILURE() << "expected a grove::Error";
  return {};
}

inline std::vector<std::string> names(const std::vector<std::pair<std::string, Tensor>>& named) {
  std::vector<std::string> out;
  for (const auto& entry : named) out.push_back(entry.first);
  return out;
}

}  // namespace grove::nn::testing
