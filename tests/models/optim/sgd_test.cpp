// SGD against the update written out in double: plain, momentum, Nesterov, weight decay, one
// and several steps, float64 and float32 parameters; and its argument errors.
#include <gtest/gtest.h>

#include <vector>

#include "models/optim/sgd.h"
#include "optim_test_util.h"

namespace grove::optim {
namespace {

using namespace testing;

// PyTorch's SGD (dampening 0), in double:
//   g = grad + weight_decay * param
//   v = momentum * v + g                                      (when momentum != 0)
//   param -= lr * (nesterov ? g + momentum * v : v)            (g when momentum == 0)
struct SgdReference {
  SgdOptions options;
  std::vector<double> param;
  std::vector<double> velocity = std::vector<double>(param.size(), 0.0);

  void step(const std::vector<double>& grad, double lr) {
    for (std::size_t i = 0; i < param.size(); ++i) {
      const double g = grad[i] + options.weight_decay * param[i];
      double direction = g;
      if (options.momentum != 0) {
        velocity[i] = options.momentum * velocity[i] + g;
        direction = options.nesterov ? g + options.momentum * velocity[i] : velocity[i];
      }
      param[i] -= lr * direction;
    }
  }
};

const std::vector<double> kStart = {0.5, -1.25, 2.0, 0.0, -0.3, 1.7};

std::vector<double> grad_at(int step) {
  std::vector<double> grad(kStart.size());
  for (std::size_t i = 0; i < grad.size(); ++i) grad[i] = gradient_value(step, i);
  return grad;
}

// Runs `steps` steps of SGD and of the reference and compares after each.
void expect_matches_reference(const SgdOptions& options, DType dtype, int steps, double tolerance) {
  const Tensor p = parameter(kStart, dtype, {2, 3});
  SGD sgd({p}, options);
  SgdReference reference{options, kStart};
  for (int s = 0; s < steps; ++s) {
    const std::vector<double> grad = grad_at(s);  // one set of values for both
    set_grad(p, grad);
    sgd.step();
    reference.step(grad, as_float32(options.lr));
    expect_close(reference.param, p, tolerance, "param after step " + std::to_string(s));
    if (options.momentum != 0) {
      expect_close(reference.velocity, sgd.velocity(0), tolerance,
                   "velocity after step " + std::to_string(s));
    }
  }
  EXPECT_EQ(sgd.step_tensor().item<std::int64_t>(), steps);
}

// float64: the kernel evaluates the same expressions in double; only the compiler contracting
// a*b+c into one fma may round differently, by about one ulp of values of order 1 per step.
constexpr double kFloat64Tolerance = 1e-14;
// float32: the kernel rounds every operation to float (ulp 1.2e-7 near 1); a few roundings per
// step, over at most 5 steps, with momentum summing earlier terms, stay within 2e-6 for values
// of order 1.
constexpr double kFloat32Tolerance = 2e-6;

TEST(Sgd, PlainStepMatchesTheFormula) {
  expect_matches_reference({.lr = 0.1}, DType::Float64, 1, kFloat64Tolerance);
  expect_matches_reference({.lr = 0.1}, DType::Float64, 4, kFloat64Tolerance);
}

TEST(Sgd, MomentumOverSeveralStepsMatchesTheFormula) {
  expect_matches_reference({.lr = 0.05, .momentum = 0.9}, DType::Float64, 5, kFloat64Tolerance);
}

TEST(Sgd, WeightDecayIsAddedToTheGradient) {
  expect_matches_reference({.lr = 0.1, .weight_decay = 0.01}, DType::Float64, 3, kFloat64Tolerance);
  expect_matches_reference({.lr = 0.1, .momentum = 0.8, .weight_decay = 0.05}, DType::Float64, 4,
                           kFloat64Tolerance);
}

TEST(Sgd, NesterovMatchesTheFormula) {
  expect_matches_reference({.lr = 0.05, .momentum = 0.9, .weight_decay = 0.01, .nesterov = true},
                           DType::Float64, 5, kFloat64Tolerance);
}

TEST(Sgd, Float32ParametersMatchTheDoubleFormula) {
  expect_matches_reference({.lr = 0.05, .momentum = 0.9, .weight_decay = 0.01, .nesterov = true},
                           DType::Float32, 5, kFloat32Tolerance);
}

TEST(Sgd, FirstStepByHand) {
  // momentum 0.9, weight decay 0.5, lr 0.5 (exact in float32): g = 1 + 0.5 * 2 = 2, v = 2,
  // param = 2 - 0.5 * 2 = 1.
  const Tensor p = parameter({2.0});
  SGD sgd({p}, {.lr = 0.5, .momentum = 0.9, .weight_decay = 0.5});
  set_grad(p, {1.0});
  sgd.step();
  EXPECT_EQ(values_of(p), std::vector<double>{1.0});
  EXPECT_EQ(values_of(sgd.velocity(0)), std::vector<double>{2.0});
}

TEST(Sgd, WithoutMomentumHasNoVelocity) {
  const Tensor p = parameter({1.0, 2.0});
  SGD sgd({p}, {.lr = 0.1});
  EXPECT_FALSE(sgd.velocity(0).defined());
  EXPECT_EQ(sgd.state().size(), 2u);  // lr and step only
}

TEST(Sgd, TheVelocityLivesOnTheParametersDeviceWithTheirDtypeAndShape) {
  const Tensor p = parameter({1, 2, 3, 4, 5, 6}, DType::Float32, {3, 2});
  SGD sgd({p}, {.momentum = 0.9});
  EXPECT_EQ(sgd.velocity(0).sizes(), p.sizes());
  EXPECT_EQ(sgd.velocity(0).dtype(), DType::Float32);
  EXPECT_EQ(sgd.velocity(0).device(), p.device());
  EXPECT_EQ(values_of(sgd.velocity(0)), std::vector<double>(6, 0.0));
  EXPECT_FALSE(sgd.velocity(0).requires_grad());
}

TEST(Sgd, RefusesBadOptions) {
  const Tensor p = parameter({1.0});
  EXPECT_NE(error_of([&] { SGD({p}, {.lr = -0.1}); }).find("learning rate"), std::string::npos);
  EXPECT_NE(error_of([&] { SGD({p}, {.momentum = -0.5}); }).find("momentum"), std::string::npos);
  EXPECT_NE(error_of([&] { SGD({p}, {.weight_decay = -1}); }).find("weight_decay"),
            std::string::npos);
  EXPECT_NE(error_of([&] { SGD({p}, {.nesterov = true}); }).find("nesterov needs momentum > 0"),
            std::string::npos);
  EXPECT_NE(error_of([&] { SGD({p}, {.lr = std::nan("")}); }).find("learning rate"),
            std::string::npos);
}

}  // namespace
}  // namespace grove::optim
