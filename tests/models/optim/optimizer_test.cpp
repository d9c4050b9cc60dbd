// The Optimizer base through SGD and AdamW: parameter checks, set_lr and the lr tensor,
// zero_grad both ways, skipping parameters without a gradient, the step count, a real backward
// driving a minimisation, and named state (names, round trip, errors).
#include <gtest/gtest.h>

#include <vector>

#include "autograd/autograd.h"
#include "models/optim/adamw.h"
#include "models/optim/sgd.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "optim_test_util.h"

namespace grove::optim {
namespace {

using namespace testing;

std::vector<std::string> names_of(const Optimizer::NamedState& state) {
  std::vector<std::string> names;
  for (const auto& [name, tensor] : state) names.push_back(name);
  return names;
}

// Copies of the state (state() returns the live tensors).
Optimizer::NamedState snapshot(const Optimizer& optimizer) {
  Optimizer::NamedState copies;
  for (const auto& [name, tensor] : optimizer.state()) copies.emplace_back(name, tensor.clone());
  return copies;
}

TEST(Optimizer, RefusesBadParameterLists) {
  const Tensor good = parameter({1.0});
  EXPECT_NE(error_of([&] { SGD({}); }).find("at least one parameter"), std::string::npos);
  EXPECT_NE(error_of([&] {
              SGD({good, Tensor()});
            }).find("parameter 1 to be a defined"),
            std::string::npos);
  const Tensor no_grad = from_vector<double>({1.0});
  EXPECT_NE(error_of([&] {
              SGD({good, no_grad});
            }).find("parameter 1 to be a leaf"),
            std::string::npos);
  const Tensor not_leaf = ops::mul(good, 2.0);
  EXPECT_NE(error_of([&] { SGD({not_leaf}); }).find("non-leaf"), std::string::npos);
  const Tensor integer = from_vector<std::int64_t>({1, 2});
  EXPECT_NE(error_of([&] {
              SGD({good, good.detach().clone().requires_grad_(), integer});
            }).find("parameter 2 to be float32 or float64"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              AdamW({good, good});
            }).find("parameter 1 is the same tensor as parameter 0"),
            std::string::npos);
}

// Module::to replaces a module's parameters with new tensors; an optimizer made before goes on
// holding the old ones, which never get a gradient again: every step silently skipped them.
TEST(Optimizer, AParameterReplacedAfterTheOptimizerWasMadeIsAnErrorAtStep) {
  Tensor weight = parameter({1.0, 2.0});
  SGD sgd({weight}, {.lr = 0.1});
  weight =
      weight.detach().to(DType::Float32).requires_grad_();  // as Module::to(DType::Float32) does
  ops::sum(ops::mul(weight, weight)).backward();
  EXPECT_NE(error_of([&] { sgd.step(); }).find("held by nothing but this optimizer"),
            std::string::npos);
  // A parameter that is still held but got no gradient is skipped, as before.
  const Tensor kept = parameter({3.0});
  SGD other({kept}, {.lr = 0.1});
  other.step();
  EXPECT_EQ(kept.to_vector<double>(), std::vector<double>({3.0}));
}

TEST(Optimizer, TheLearningRateLivesInAFloat32TensorOnTheDevice) {
  const Tensor p = parameter({1.0}, DType::Float64);
  SGD sgd({p}, {.lr = 0.1});
  EXPECT_EQ(sgd.lr(), 0.1);
  EXPECT_EQ(sgd.lr_tensor().dtype(), DType::Float32);
  EXPECT_EQ(sgd.lr_tensor().numel(), 1);
  EXPECT_EQ(sgd.lr_tensor().device(), p.device());
  EXPECT_EQ(sgd.lr_tensor().item<float>(), 0.1f);
  sgd.set_lr(0.025);
  EXPECT_EQ(sgd.lr(), 0.025);
  EXPECT_EQ(sgd.lr_tensor().item<float>(), 0.025f);
  EXPECT_NE(error_of([&] { sgd.set_lr(-1.0); }).find("learning rate"), std::string::npos);
  EXPECT_EQ(sgd.lr(), 0.025);  // unchanged by the refused rate
}

TEST(Optimizer, TheUpdateFollowsSetLr) {
  // Plain SGD with rates exact in float32: each step moves by -lr * grad.
  const Tensor p = parameter({1.0, -2.0});
  SGD sgd({p}, {.lr = 0.5});
  set_grad(p, {1.0, 2.0});
  sgd.step();
  EXPECT_EQ(values_of(p), (std::vector<double>{0.5, -3.0}));
  sgd.set_lr(0.25);
  sgd.step();
  EXPECT_EQ(values_of(p), (std::vector<double>{0.25, -3.5}));
}

TEST(Optimizer, ZeroGradSetsToNoneByDefault) {
  const Tensor a = parameter({1.0, 2.0});
  const Tensor b = parameter({3.0});
  SGD sgd({a, b});
  set_grad(a, {1.0, 1.0});
  set_grad(b, {1.0});
  sgd.zero_grad();
  EXPECT_FALSE(a.grad().defined());
  EXPECT_FALSE(b.grad().defined());
}

TEST(Optimizer, ZeroGradInPlaceKeepsTheGradientsMemory) {
  const Tensor a = parameter({1.0, 2.0});
  const Tensor b = parameter({3.0});  // no gradient: stays without one
  SGD sgd({a, b});
  set_grad(a, {4.0, -5.0});
  const Tensor before = a.grad();
  sgd.zero_grad(/*set_to_none=*/false);
  ASSERT_TRUE(a.grad().defined());
  EXPECT_TRUE(a.grad().is_alias_of(before));
  EXPECT_EQ(values_of(a.grad()), (std::vector<double>{0.0, 0.0}));
  EXPECT_FALSE(b.grad().defined());
}

TEST(Optimizer, ParametersWithoutAGradientAreSkipped) {
  const Tensor a = parameter({1.0, 2.0});
  const Tensor b = parameter({3.0});
  SGD sgd({a, b}, {.lr = 0.5, .momentum = 0.9, .weight_decay = 0.1});
  set_grad(a, {1.0, 1.0});
  sgd.step();  // b has no gradient: neither it nor its velocity moves (weight decay included)
  EXPECT_EQ(values_of(b), std::vector<double>{3.0});
  EXPECT_EQ(values_of(sgd.velocity(1)), std::vector<double>{0.0});
  EXPECT_NE(values_of(a), (std::vector<double>{1.0, 2.0}));

  AdamW adamw({b});
  adamw.step();  // no gradient at all: only the step count advances
  EXPECT_EQ(values_of(b), std::vector<double>{3.0});
  EXPECT_EQ(adamw.step_tensor().item<std::int64_t>(), 1);
}

TEST(Optimizer, MinimisesAQuadraticThroughBackward) {
  // loss = sum((w - target)^2): the gradients come from backward(), the minimum is target.
  const Tensor target = from_vector<double>({1.0, 1.0, -1.0});
  for (const bool use_adamw : {false, true}) {
    const Tensor w = parameter({3.0, -2.0, 0.5});
    std::unique_ptr<Optimizer> optimizer;
    if (use_adamw) {
      optimizer = std::make_unique<AdamW>(std::vector<Tensor>{w},
                                          AdamwOptions{.lr = 0.1, .weight_decay = 0.0});
    } else {
      optimizer =
          std::make_unique<SGD>(std::vector<Tensor>{w}, SgdOptions{.lr = 0.1, .momentum = 0.5});
    }
    for (int s = 0; s < 200; ++s) {
      optimizer->zero_grad();
      const Tensor difference = ops::sub(w, target);
      ops::sum(ops::mul(difference, difference)).backward();
      optimizer->step();
    }
    // SGD converges geometrically; AdamW's steps shrink with its moments and it ends within
    // about lr of the minimum's neighbourhood, which 0.05 covers.
    expect_close({1.0, 1.0, -1.0}, w, use_adamw ? 0.05 : 1e-6, use_adamw ? "adamw" : "sgd");
  }
}

TEST(Optimizer, StateNamesTheLrTheStepAndEachBuffer) {
  const Tensor a = parameter({1.0, 2.0});
  const Tensor b = parameter({3.0});
  EXPECT_EQ(names_of(SGD({a, b}, {.momentum = 0.9}).state()),
            (std::vector<std::string>{"lr", "step", "velocity.0", "velocity.1"}));
  EXPECT_EQ(names_of(SGD({a, b}).state()), (std::vector<std::string>{"lr", "step"}));
  EXPECT_EQ(names_of(AdamW({a, b}).state()),
            (std::vector<std::string>{"lr", "step", "exp_avg.0", "exp_avg_sq.0", "exp_avg.1",
                                      "exp_avg_sq.1"}));
  AdamW adamw({a, b});
  EXPECT_TRUE(adamw.state()[2].second.is_alias_of(adamw.exp_avg(0)));  // live, not a copy
}

TEST(Optimizer, LoadStateResumesExactly) {
  // Two runs from the same start: one steps 5 times; the other steps 3 times, saves, a fresh
  // optimizer loads the state and the parameters, and steps twice. Same values bit for bit.
  const std::vector<double> start = {0.5, -1.0, 2.0};
  // One table for both runs (computed once: the compiler may fold sin differently per call site).
  std::vector<std::vector<double>> grads;
  for (int s = 0; s < 5; ++s) {
    grads.push_back({gradient_value(s, 0), gradient_value(s, 1), gradient_value(s, 2)});
  }
  const auto grad = [&](int s) { return grads.at(static_cast<std::size_t>(s)); };
  const Tensor straight = parameter(start);
  AdamW reference({straight}, {.lr = 0.02});
  for (int s = 0; s < 5; ++s) {
    if (s == 3) reference.set_lr(0.01);
    set_grad(straight, grad(s));
    reference.step();
  }
  const Tensor first = parameter(start);
  AdamW before({first}, {.lr = 0.02});
  for (int s = 0; s < 3; ++s) {
    set_grad(first, grad(s));
    before.step();
  }
  before.set_lr(0.01);
  const Optimizer::NamedState saved = snapshot(before);
  const Tensor resumed = parameter(values_of(first));
  AdamW after({resumed}, {.lr = 0.5});
  after.load_state(saved);
  EXPECT_EQ(after.lr(), as_float32(0.01));  // the host mirror follows the loaded tensor
  EXPECT_EQ(after.step_tensor().item<std::int64_t>(), 3);
  for (int s = 3; s < 5; ++s) {
    set_grad(resumed, grad(s));
    after.step();
  }
  EXPECT_EQ(values_of(resumed), values_of(straight));
  EXPECT_EQ(values_of(after.exp_avg_sq(0)), values_of(reference.exp_avg_sq(0)));
}

TEST(Optimizer, LoadStateCopiesIntoTheLiveTensorsAcrossDtypes) {
  const Tensor p = parameter({1.0, 2.0}, DType::Float32);
  SGD sgd({p}, {.momentum = 0.9});
  const Tensor velocity = sgd.velocity(0);
  Optimizer::NamedState state = snapshot(sgd);
  state[2].second = from_vector<double>({0.25, -0.5});  // float64 into a float32 buffer
  sgd.load_state(state);
  EXPECT_TRUE(sgd.velocity(0).is_alias_of(velocity));
  EXPECT_EQ(values_of(velocity), (std::vector<double>{0.25, -0.5}));
}

TEST(Optimizer, LoadStateRefusesAndChangesNothing) {
  const Tensor a = parameter({1.0, 2.0});
  SGD sgd({a}, {.lr = 0.1, .momentum = 0.9});
  const Optimizer::NamedState good = snapshot(sgd);
  const auto refused = [&](Optimizer::NamedState state) {
    return error_of([&] { sgd.load_state(state); });
  };
  Optimizer::NamedState missing = good;
  missing.pop_back();
  EXPECT_NE(refused(missing).find("'velocity.0' is missing"), std::string::npos);
  Optimizer::NamedState extra = good;
  extra.emplace_back("velocity.7", zeros({2}, DType::Float64));
  EXPECT_NE(refused(extra).find("unexpected entry 'velocity.7'"), std::string::npos);
  Optimizer::NamedState twice = good;
  twice.push_back(good[0]);
  EXPECT_NE(refused(twice).find("'lr' is given twice"), std::string::npos);
  Optimizer::NamedState misshaped = good;
  misshaped[2].second = ones({3}, DType::Float64);
  EXPECT_NE(refused(misshaped).find("'velocity.0' to have sizes [2]"), std::string::npos);
  Optimizer::NamedState bad_lr = good;
  bad_lr[0].second = full({}, -1.0);
  bad_lr[2].second = ones({2}, DType::Float64);
  EXPECT_NE(refused(bad_lr).find("learning rate"), std::string::npos);
  Optimizer::NamedState bad_step = good;
  bad_step[1].second = full({}, 2.5);
  EXPECT_NE(refused(bad_step).find("'step' to hold a whole number"), std::string::npos);
  Optimizer::NamedState undefined = good;
  undefined[2].second = Tensor();
  EXPECT_NE(refused(undefined).find("'velocity.0' is an undefined tensor"), std::string::npos);
  // Nothing was copied by the refused loads (bad_lr carried a velocity of ones).
  EXPECT_EQ(values_of(sgd.velocity(0)), (std::vector<double>{0.0, 0.0}));
  EXPECT_EQ(sgd.lr(), 0.1);
}

}  // namespace
}  // namespace grove::optim
