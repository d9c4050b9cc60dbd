// Shared helpers for the compile() tests: a fresh manager per scenario, quiet options,
// parameters and inputs on the device of the build (kTestDevice), a two-layer MLP, and
// bit-for-bit comparison.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/rng.h"
#include "graphs/compile/compile.h"
#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "ops/random.h"
#include "tree_test_util.h"

namespace grove::graphs::testing {

using namespace grove::ops;

// Runs `body` on a fresh thread (a fresh tree manager for kTestDevice, quiet, with debug checks).
inline void on_fresh_thread(const std::function<void()>& body) {
  with_manager([&](TreeManager&) { body(); });
}

inline CompileOptions quiet(CompileMode mode = CompileMode::Graphed) {
  CompileOptions options;
  options.mode = mode;
  options.print_warnings = false;
  options.tree_options = test_options();
  return options;
}

inline Tensor on_device(const Tensor& cpu) {
  return cpu.to(kTestDevice);
}

// Parameters drawn on the CPU (the generator's reference numbers), then moved.
inline Tensor parameter(IntArrayRef sizes, std::uint64_t seed) {
  Generator generator(seed);
  Tensor values = rand(sizes, {}, &generator);
  return on_device(values * 0.5 - 0.25).requires_grad_();
}

inline Tensor input(IntArrayRef sizes, std::uint64_t seed) {
  Generator generator(seed);
  return on_device(randn(sizes, {}, &generator));
}

// Equal bits on the CPU; on a GPU the same kernels run on both paths, so also equal.
inline void expect_equal(const Tensor& expected, const Tensor& got, const std::string& what) {
  ASSERT_EQ(expected.sizes(), got.sizes()) << what;
  const std::vector<float> a = expected.detach().to(kCPU).to_vector<float>();
  const std::vector<float> b = got.detach().to(kCPU).to_vector<float>();
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i], b[i]) << what << ": element " << i;
  }
}

struct Mlp {
  Tensor w1 = parameter({16, 8}, 1), b1 = parameter({16}, 2);
  Tensor w2 = parameter({4, 16}, 3), b2 = parameter({4}, 4);
  std::vector<Tensor> parameters() const { return {w1, b1, w2, b2}; }
  Tensor forward(const Tensor& x) const { return linear(relu(linear(x, w1, b1)), w2, b2); }
  void zero_grad() const {
    for (const Tensor& p : parameters()) p.set_grad({});
  }
};

inline Tensor targets(std::int64_t n, std::uint64_t seed) {
  Generator generator(seed);
  return randint(0, 4, {n}, &generator, kTestDevice);
}

}  // namespace grove::graphs::testing
