// The fused optimizer updates (ops/optim.h) and autograd: they write into leaves that require
// grad only under NoGradGuard, and never record a graph.
#include <gtest/gtest.h>

#include "autograd/autograd.h"
#include "ops/elementwise.h"
#include "ops/optim.h"

namespace grove::autograd {
namespace {

TEST(OptimStepTest, WritesParametersOnlyUnderNoGrad) {
  const Tensor p = ones({3}).requires_grad_();
  const Tensor g = ones({3});
  EXPECT_THROW(ops::sgd_(p, g, Tensor(), {0.5}), Error);
  {
    const NoGradGuard no_grad;
    ops::sgd_(p, g, Tensor(), {0.5});
  }
  EXPECT_EQ(p.detach().to_vector<float>(), (std::vector<float>{0.5f, 0.5f, 0.5f}));
  EXPECT_TRUE(p.is_leaf());
}

TEST(OptimStepTest, RefusesToRecordWithGradientsFlowingIn) {
  // A non-leaf target under grad mode: the update has no derivative, so recording is refused.
  const Tensor w = ones({3}).requires_grad_();
  const Tensor p = ops::mul(w, 2.0);
  EXPECT_THROW(ops::sgd_(p, ones({3}), Tensor(), {0.5}), Error);
}

}  // namespace
}  // namespace grove::autograd
