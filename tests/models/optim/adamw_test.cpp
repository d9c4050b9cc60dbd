// AdamW against the update written out in double, one and several steps, with and without
// weight decay, float64 and float32 parameters; and its argument errors.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "models/optim/adamw.h"
#include "optim_test_util.h"

namespace grove::optim {
namespace {

using namespace testing;

// PyTorch's AdamW, in double, at step t (1 on the first step):
//   param *= 1 - lr * weight_decay
//   m = beta1 * m + (1 - beta1) * grad
//   v = beta2 * v + (1 - beta2) * grad^2
//   param -= (lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
struct AdamwReference {
  AdamwOptions options;
  std::vector<double> param;
  std::vector<double> m = std::vector<double>(param.size(), 0.0);
  std::vector<double> v = std::vector<double>(param.size(), 0.0);
  int t = 0;

  void step(const std::vector<double>& grad, double lr) {
    ++t;
    const double correction1 = 1 - std::pow(options.beta1, t);
    const double correction2 = 1 - std::pow(options.beta2, t);
    for (std::size_t i = 0; i < param.size(); ++i) {
      param[i] *= 1 - lr * options.weight_decay;
      m[i] = options.beta1 * m[i] + (1 - options.beta1) * grad[i];
      v[i] = options.beta2 * v[i] + (1 - options.beta2) * grad[i] * grad[i];
      param[i] -=
          (lr / correction1) * m[i] / (std::sqrt(v[i]) / std::sqrt(correction2) + options.eps);
    }
  }
};

const std::vector<double> kStart = {0.5, -1.25, 2.0, 0.0, -0.3, 1.7, 0.9, -2.2};

std::vector<double> grad_at(int step) {
  std::vector<double> grad(kStart.size());
  for (std::size_t i = 0; i < grad.size(); ++i) grad[i] = gradient_value(step, i);
  grad[3] = 0.0;  // an element whose moments stay 0: the update divides by eps alone
  return grad;
}

void expect_matches_reference(const AdamwOptions& options, DType dtype, int steps,
                              double tolerance) {
  const Tensor p = parameter(kStart, dtype, {4, 2});
  AdamW adamw({p}, options);
  AdamwReference reference{options, kStart};
  for (int s = 0; s < steps; ++s) {
    const std::vector<double> grad = grad_at(s);  // one set of values for both
    set_grad(p, grad);
    adamw.step();
    reference.step(grad, as_float32(options.lr));
    const std::string when = " after step " + std::to_string(s);
    expect_close(reference.param, p, tolerance, "param" + when);
    expect_close(reference.m, adamw.exp_avg(0), tolerance, "exp_avg" + when);
    expect_close(reference.v, adamw.exp_avg_sq(0), tolerance, "exp_avg_sq" + when);
  }
  EXPECT_EQ(adamw.step_tensor().item<std::int64_t>(), steps);
}

// float64: the kernel evaluates the same expressions in double (its bias corrections too); the
// order of a few operations and fma contraction may differ by an ulp or so of values of order 1.
constexpr double kFloat64Tolerance = 1e-13;
// float32: each of the ~10 operations per element rounds to float (ulp 1.2e-7 near 1), and the
// update divides by sqrt(v), which amplifies relative errors of m and v by at most lr / |update|
// ~ 1 here; over 6 steps that stays within 3e-6 for values of order 1.
constexpr double kFloat32Tolerance = 3e-6;

TEST(Adamw, FirstStepMatchesTheFormula) {
  expect_matches_reference({.lr = 0.01}, DType::Float64, 1, kFloat64Tolerance);
}

TEST(Adamw, SeveralStepsMatchTheFormula) {
  expect_matches_reference({.lr = 0.01, .beta1 = 0.8, .beta2 = 0.95, .weight_decay = 0.1},
                           DType::Float64, 6, kFloat64Tolerance);
}

TEST(Adamw, WithoutWeightDecayMatchesTheFormula) {
  expect_matches_reference({.lr = 0.003, .weight_decay = 0.0}, DType::Float64, 4,
                           kFloat64Tolerance);
}

TEST(Adamw, Float32ParametersMatchTheDoubleFormula) {
  expect_matches_reference({.lr = 0.01, .weight_decay = 0.05}, DType::Float32, 6,
                           kFloat32Tolerance);
}

TEST(Adamw, FirstStepMovesByLrTimesTheGradientsSign) {
  // At t = 1 the bias-corrected m / sqrt(v) is grad / |grad|, so without weight decay the
  // parameter moves by lr (0.5, exact in float32) against the gradient's sign, up to eps.
  const Tensor p = parameter({1.0, 1.0});
  AdamW adamw({p}, {.lr = 0.5, .weight_decay = 0.0});
  set_grad(p, {3.0, -0.25});
  adamw.step();
  // eps / |grad| relative: at most 1e-8 / 0.25 of the step 0.5.
  expect_close({0.5, 1.5}, p, 3e-8, "param");
}

TEST(Adamw, DefaultsArePyTorchs) {
  const AdamwOptions defaults;
  EXPECT_EQ(defaults.lr, 1e-3);
  EXPECT_EQ(defaults.beta1, 0.9);
  EXPECT_EQ(defaults.beta2, 0.999);
  EXPECT_EQ(defaults.eps, 1e-8);
  EXPECT_EQ(defaults.weight_decay, 0.01);
}

TEST(Adamw, MomentsLiveOnTheParametersDeviceWithTheirDtypeAndShape) {
  const Tensor p = parameter({1, 2, 3, 4, 5, 6}, DType::Float32, {2, 3});
  AdamW adamw({p});
  for (const Tensor& moment : {adamw.exp_avg(0), adamw.exp_avg_sq(0)}) {
    EXPECT_EQ(moment.sizes(), p.sizes());
    EXPECT_EQ(moment.dtype(), DType::Float32);
    EXPECT_EQ(moment.device(), p.device());
    EXPECT_EQ(values_of(moment), std::vector<double>(6, 0.0));
  }
}

TEST(Adamw, RefusesBadOptions) {
  const Tensor p = parameter({1.0});
  const auto message = [&](AdamwOptions options) { return error_of([&] { AdamW({p}, options); }); };
  EXPECT_NE(message({.beta1 = 1.0}).find("beta1 in [0, 1)"), std::string::npos);
  EXPECT_NE(message({.beta1 = -0.1}).find("beta1 in [0, 1)"), std::string::npos);
  EXPECT_NE(message({.beta2 = 1.5}).find("beta2 in [0, 1)"), std::string::npos);
  EXPECT_NE(message({.eps = 0.0}).find("eps finite and > 0"), std::string::npos);
  EXPECT_NE(message({.weight_decay = -0.01}).find("weight_decay"), std::string::npos);
  EXPECT_NE(message({.lr = -1.0}).find("learning rate"), std::string::npos);
  EXPECT_NE(message({.lr = INFINITY}).find("learning rate"), std::string::npos);
}

}  // namespace
}  // namespace grove::optim
