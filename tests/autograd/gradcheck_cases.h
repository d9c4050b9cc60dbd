// What the gradcheck tests share (tests/autograd/gradcheck_<family>_test.cpp): the case type, the
// families' case tables (for the coverage test), and makers of small float64 inputs.
//
// A case is one table entry: a name, its inputs, and the function to check, e.g.
//   {"mul_broadcast_both", {leaf({3, 1}), leaf({1, 4}, 2)}, mul_of},
// The inputs are makers (leaf, constant, int64_tensor, ...), called when the test runs: every
// run gets fresh tensors (gradcheck perturbs its inputs' memory), and the tables hold no tensors
// (they are built during static initialisation). Inputs that require gradients are checked; the
// others (targets, indices, masks) are constants. Inputs are small (a few to ~100 elements):
// gradcheck costs two forward calls per input element and one backward per output element.
//
// Inputs stay away from the points where a function has a kink (relu and abs at 0, clamp at its
// bounds, maximum and minimum where the operands tie): there the one-sided derivatives differ,
// and central differences average them. Ties are tested with explicit expected gradients.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <ostream>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "autograd/autograd.h"

namespace grove::autograd::testing {

using Inputs = std::span<const Tensor>;
using MakeInput = std::function<Tensor()>;

struct GradcheckCase {
  const char* name;
  std::vector<MakeInput> inputs;
  GradcheckFn fn;
  GradcheckOptions options = {};
};

inline void PrintTo(const GradcheckCase& c, std::ostream* out) {
  *out << c.name;
}

// Test names from the case names.
struct CaseName {
  std::string operator()(const ::testing::TestParamInfo<GradcheckCase>& info) const {
    return info.param.name;
  }
};

// The families' tables, defined in their test files; gradcheck_coverage_test.cpp reads them all.
const std::vector<GradcheckCase>& elementwise_gradcheck_cases();
const std::vector<GradcheckCase>& inplace_gradcheck_cases();
const std::vector<GradcheckCase>& reduce_gradcheck_cases();
const std::vector<GradcheckCase>& linalg_gradcheck_cases();
const std::vector<GradcheckCase>& nn_gradcheck_cases();
const std::vector<GradcheckCase>& shape_gradcheck_cases();

inline std::vector<Tensor> make_inputs(const GradcheckCase& c) {
  std::vector<Tensor> inputs;
  for (const MakeInput& make : c.inputs) inputs.push_back(make());
  return inputs;
}

inline void expect_gradcheck(const GradcheckCase& c) {
  const GradcheckResult result = gradcheck(c.fn, make_inputs(c), c.options);
  EXPECT_TRUE(result.ok) << c.name << ":\n" << result.report;
}

// --- values ---

// Uniform values in [low, high), deterministic per seed, nudged at least `margin` away from
// every kink.
inline std::vector<double> uniform_values(std::int64_t count, double low, double high,
                                          unsigned seed, const std::vector<double>& kinks = {},
                                          double margin = 0.05) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<double> distribution(low, high);
  std::vector<double> values(static_cast<std::size_t>(count));
  for (double& value : values) {
    value = distribution(engine);
    for (double kink : kinks) {
      if (std::abs(value - kink) < margin) value = kink + (value < kink ? -margin : margin);
    }
  }
  return values;
}

// A float64 tensor of uniform values in [low, high) that does not require gradients.
inline Tensor random_tensor(IntArrayRef sizes, unsigned seed = 1, double low = -2.0,
                            double high = 2.0) {
  return from_vector(uniform_values(product(sizes), low, high, seed)).reshape(sizes);
}

// --- input makers ---

// A float64 constant (no gradients) in [low, high).
inline MakeInput constant(DimVector sizes, unsigned seed = 1, double low = -2.0,
                          double high = 2.0) {
  return [=] { return random_tensor(sizes, seed, low, high); };
}

// A float64 leaf in [low, high) that requires gradients.
inline MakeInput leaf(DimVector sizes, unsigned seed = 1, double low = -2.0, double high = 2.0) {
  return [=] { return random_tensor(sizes, seed, low, high).requires_grad_(); };
}

// A leaf in [0.5, 2): for log, sqrt, rsqrt, pow with a non-integer exponent, divisors.
inline MakeInput positive_leaf(DimVector sizes, unsigned seed = 1) {
  return leaf(std::move(sizes), seed, 0.5, 2.0);
}

// A leaf in [-2, 2) at least 0.05 away from every kink.
inline MakeInput leaf_avoiding(DimVector sizes, std::vector<double> kinks, unsigned seed = 1) {
  return [=] {
    return from_vector(uniform_values(product(sizes), -2.0, 2.0, seed, kinks))
        .reshape(sizes)
        .requires_grad_();
  };
}

// A non-contiguous leaf of the given shape (at least 2-d): its last two dims are stored
// transposed. It has no history (it is not a view of a tensor that requires gradients), so it is
// a leaf in its own right.
inline MakeInput transposed_leaf(DimVector sizes, unsigned seed = 1, double low = -2.0,
                                 double high = 2.0) {
  return [=] {
    DimVector stored(sizes);
    std::swap(stored[stored.size() - 1], stored[stored.size() - 2]);
    const Tensor result = random_tensor(stored, seed, low, high).transpose(-1, -2);
    EXPECT_FALSE(result.is_contiguous());
    return result.requires_grad_();
  };
}

// A non-contiguous leaf: every other element of the last dim of a buffer twice as wide.
inline MakeInput strided_leaf(DimVector sizes, unsigned seed = 1, double low = -2.0,
                              double high = 2.0) {
  return [=] {
    DimVector stored(sizes);
    stored[stored.size() - 1] *= 2;
    const Tensor result = random_tensor(stored, seed, low, high).slice(-1, 0, stored.back(), 2);
    EXPECT_FALSE(result.is_contiguous());
    return result.requires_grad_();
  };
}

// A leaf whose values are multiples of 1/8 in [-2, 2]: exact in float32, and so are their
// perturbations by kFloat32RoundTrip's step.
inline MakeInput dyadic_leaf(DimVector sizes, unsigned seed = 1) {
  return [=] {
    std::vector<double> values = uniform_values(product(sizes), -2.0, 2.0, seed);
    for (double& value : values) value = std::round(value * 8.0) / 8.0;
    return from_vector(values).reshape(sizes).requires_grad_();
  };
}

// Options for functions that round-trip through float32 (copy_ or to() of another dtype). The
// default step 1e-6 is below float32's resolution near 1 (a 6e-8 rounding error over a 1e-6 step
// puts the quotient off by ~0.06, far beyond atol). dyadic_leaf's values plus or minus 2^-10
// need 3 + 10 fraction bits, well inside float32's 24, so the round trip is exact and central
// differences see the exact derivative.
inline constexpr GradcheckOptions kFloat32RoundTrip{.eps = 1.0 / 1024.0};

// An int64 constant (class targets, embedding indices); empty sizes: 1-d.
inline MakeInput int64_tensor(std::vector<std::int64_t> values, DimVector sizes = {}) {
  return [=] {
    const Tensor result = from_vector(values);
    return sizes.empty() ? result : result.reshape(sizes);
  };
}

// A bool constant (masks, conditions).
inline MakeInput bool_tensor(std::vector<std::int64_t> values, DimVector sizes) {
  return [=] { return from_vector(values).reshape(sizes).to(DType::Bool); };
}

}  // namespace grove::autograd::testing
