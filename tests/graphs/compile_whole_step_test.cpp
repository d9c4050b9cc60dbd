// A whole training step in one compiled graph: forward, backward(), the optimizer's update and
// zeroing the gradients, compared with the same step run eagerly, step by step.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "compile_test_util.h"
#include "ops/optim.h"
#include "ops/softmax.h"

namespace grove::graphs {
namespace {

using namespace grove::graphs::testing;
using CompileWholeStep = testing::TreeTest;

constexpr int kSteps = 50;

// A model with an optimizer's state, made lazily on the first step as optimizers do.
struct Trainee {
  Mlp mlp;
  std::vector<Tensor> velocity, exp_avg, exp_avg_sq;
  Tensor step = on_device(zeros({}));  // AdamW's step count, on the device
  Tensor one = on_device(ones({}));
};

enum class Optimizer { SgdMomentum, Adamw };

TensorList train_step(Trainee& trainee, Optimizer optimizer, bool grads_to_none,
                      const TensorList& in) {
  const Tensor loss = cross_entropy(trainee.mlp.forward(in[0]), in[1]);
  loss.backward();
  const autograd::NoGradGuard no_grad;
  const std::vector<Tensor> params = trainee.mlp.parameters();
  if (optimizer == Optimizer::SgdMomentum) {
    if (trainee.velocity.empty()) {
      for (const Tensor& p : params) trainee.velocity.push_back(zeros_like(p));
    }
    for (std::size_t i = 0; i < params.size(); ++i) {
      sgd_(params[i], params[i].grad(), trainee.velocity[i], {.lr = 0.1, .momentum = 0.9});
    }
  } else {
    if (trainee.exp_avg.empty()) {
      for (const Tensor& p : params) {
        trainee.exp_avg.push_back(zeros_like(p));
        trainee.exp_avg_sq.push_back(zeros_like(p));
      }
    }
    add_(trainee.step, trainee.one);
    for (std::size_t i = 0; i < params.size(); ++i) {
      adamw_(params[i], params[i].grad(), trainee.exp_avg[i], trainee.exp_avg_sq[i], trainee.step,
             {.lr = 0.01});
    }
  }
  for (const Tensor& p : params) {
    if (grads_to_none) {
      p.set_grad({});
    } else {
      p.grad().zero_();
    }
  }
  return {loss.detach()};
}

void expect_whole_step_equals_eager(Optimizer optimizer, bool grads_to_none) {
  on_fresh_thread([&] {
    Trainee eager, graphed;  // the same parameters (fixed seeds)
    CompiledFunction step = compile(
        [&](const TensorList& in) { return train_step(graphed, optimizer, grads_to_none, in); },
        quiet());
    for (int s = 0; s < kSteps; ++s) {
      const TensorList batch = {input({6, 8}, 500 + s), targets(6, 600 + s)};
      const Tensor expected = train_step(eager, optimizer, grads_to_none, batch)[0];
      const Tensor got = step(batch)[0];
      expect_equal(expected, got, "loss of step " + std::to_string(s));
    }
    for (std::size_t i = 0; i < eager.mlp.parameters().size(); ++i) {
      expect_equal(eager.mlp.parameters()[i], graphed.mlp.parameters()[i],
                   "parameter " + std::to_string(i));
    }
    // Call 1 traces and makes the optimizer's state; call 2 traces again, finding it; call 3
    // warms up; call 4 records; every later call replays.
    EXPECT_EQ(step.stats().traces, 2u);
    EXPECT_EQ(step.stats().eager_calls, 0u);
    const TreeCounters& counters = tree_manager(kTestDevice).counters();
    EXPECT_EQ(counters.eager_fallbacks, 0u);
    EXPECT_EQ(counters.recordings, 1u);
    EXPECT_EQ(counters.replays, static_cast<std::uint64_t>(kSteps - 4));
  });
}

TEST_F(CompileWholeStep, SgdWithMomentumEqualsEagerStepByStep) {
  expect_whole_step_equals_eager(Optimizer::SgdMomentum, /*grads_to_none=*/false);
}

TEST_F(CompileWholeStep, SgdWithGradientsSetToNoneEqualsEager) {
  expect_whole_step_equals_eager(Optimizer::SgdMomentum, /*grads_to_none=*/true);
}

TEST_F(CompileWholeStep, AdamwEqualsEagerStepByStep) {
  expect_whole_step_equals_eager(Optimizer::Adamw, /*grads_to_none=*/false);
}

}  // namespace
}  // namespace grove::graphs
