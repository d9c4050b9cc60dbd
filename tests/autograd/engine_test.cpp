// The backward engine: graph shapes (chains, diamonds, shared subexpressions), accumulation,
// retain_graph, grad(), grad mode, detach, hooks, and the errors users can cause.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "autograd/autograd.h"
#include "ops/elementwise.h"
#include "ops/inplace.h"
#include "ops/linalg.h"
#include "ops/reduce.h"

namespace grove::autograd {
namespace {

using namespace grove::ops;

Tensor leaf(std::vector<double> values, IntArrayRef sizes = {}) {
  return from_vector(values, sizes).requires_grad_();
}

std::vector<double> values(const Tensor& tensor) {
  return tensor.contiguous().to_vector<double>();
}

[[maybe_unused]] std::string error_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

TEST(Engine, ChainRuleThroughElementwiseOps) {
  const Tensor x = leaf({1.0, 2.0, 3.0});
  const Tensor y = sum(mul(exp(x), x));  // d/dx = exp(x) (1 + x)
  y.backward();
  const std::vector<double> grad = values(x.grad());
  for (std::size_t i = 0; i < 3; ++i) {
    const double v = static_cast<double>(i + 1);
    EXPECT_NEAR(grad[i], std::exp(v) * (1 + v), 1e-4 * std::exp(v));
  }
}

}  // namespace
}  // namespace grove::autograd
