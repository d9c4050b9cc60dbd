// Learning-rate schedules: values at chosen steps against their formulas, apply() driving an
// optimizer's rate and its update, and argument errors.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <vector>

#include "models/optim/schedule.h"
#include "models/optim/sgd.h"
#include "optim_test_util.h"

namespace grove::optim {
namespace {

using namespace testing;

// The schedules compute in double with the same expressions as below; cos may differ from the
// value written here only by its own rounding, an ulp or two.
constexpr double kTolerance = 1e-15;

TEST(Schedule, ConstantIsTheSameEverywhere) {
  const ConstantLr schedule(0.3);
  EXPECT_EQ(schedule.lr_at(0), 0.3);
  EXPECT_EQ(schedule.lr_at(1000000), 0.3);
}

TEST(Schedule, WarmupCosineAtChosenSteps) {
  // base 1, 4 warm-up steps, 12 in all, floor 0.1: the decay spans steps 4..11 (8 steps).
  const WarmupCosineLr schedule(1.0, 4, 12, 0.1);
  EXPECT_NEAR(schedule.lr_at(0), 0.25, kTolerance);  // base * 1/4
  EXPECT_NEAR(schedule.lr_at(1), 0.5, kTolerance);
  EXPECT_NEAR(schedule.lr_at(3), 1.0, kTolerance);              // warm-up ends at base
  EXPECT_NEAR(schedule.lr_at(4), 1.0, kTolerance);              // decay starts at base (progress 0)
  EXPECT_NEAR(schedule.lr_at(8), 0.1 + 0.9 * 0.5, kTolerance);  // progress 1/2: halfway
  const double at_6 = 0.1 + 0.9 * 0.5 * (1 + std::cos(std::numbers::pi * 2.0 / 8.0));
  EXPECT_NEAR(schedule.lr_at(6), at_6, kTolerance);
  const double at_11 = 0.1 + 0.9 * 0.5 * (1 + std::cos(std::numbers::pi * 7.0 / 8.0));
  EXPECT_NEAR(schedule.lr_at(11), at_11, kTolerance);
  EXPECT_EQ(schedule.lr_at(12), 0.1);  // the floor from total_steps on
  EXPECT_EQ(schedule.lr_at(500), 0.1);
}

TEST(Schedule, WarmupCosineIsMonotoneAfterTheWarmUp) {
  const WarmupCosineLr schedule(3e-4, 10, 100);
  for (std::int64_t s = 10; s < 110; ++s) {
    EXPECT_LE(schedule.lr_at(s + 1), schedule.lr_at(s)) << "step " << s;
  }
  EXPECT_EQ(schedule.lr_at(100), 0.0);
}

TEST(Schedule, WarmupCosineWithoutWarmUpStartsAtBase) {
  const WarmupCosineLr schedule(2.0, 0, 4);
  EXPECT_EQ(schedule.lr_at(0), 2.0);
  EXPECT_NEAR(schedule.lr_at(2), 1.0, kTolerance);  // progress 1/2, floor 0
}

TEST(Schedule, StepLrMultipliesByGammaEveryStepSize) {
  const StepLr schedule(0.8, 3, 0.5);
  EXPECT_EQ(schedule.lr_at(0), 0.8);
  EXPECT_EQ(schedule.lr_at(2), 0.8);
  EXPECT_EQ(schedule.lr_at(3), 0.4);
  EXPECT_EQ(schedule.lr_at(5), 0.4);
  EXPECT_EQ(schedule.lr_at(6), 0.2);
  EXPECT_EQ(schedule.lr_at(30), 0.8 * std::pow(0.5, 10));
}

TEST(Schedule, ApplyDrivesTheOptimizerAndItsUpdate) {
  // Plain SGD: each step moves the parameter by -lr_at(step) * grad, with the float32 rate.
  const StepLr schedule(0.1, 2, 0.3);
  const Tensor p = parameter({1.0, -1.0});
  SGD sgd({p}, {.lr = 123.0});  // overwritten by the schedule before the first step
  std::vector<double> expected = {1.0, -1.0};
  for (int s = 0; s < 6; ++s) {
    schedule.apply(sgd, s);
    EXPECT_EQ(sgd.lr(), schedule.lr_at(s));
    EXPECT_EQ(sgd.lr_tensor().item<float>(), static_cast<float>(schedule.lr_at(s)));
    set_grad(p, {1.0, 2.0});
    sgd.step();
    expected[0] -= as_float32(schedule.lr_at(s)) * 1.0;
    expected[1] -= as_float32(schedule.lr_at(s)) * 2.0;
    // The same double operations as the kernel's, in another order of steps: exact to an ulp.
    expect_close(expected, p, 1e-15, "param after step " + std::to_string(s));
  }
}

TEST(Schedule, RefusesNonsensicalArguments) {
  EXPECT_NE(error_of([] { ConstantLr(-1.0); }).find("lr finite and >= 0"), std::string::npos);
  EXPECT_NE(error_of([] { WarmupCosineLr(1.0, 5, 3); }).find("warmup_steps <= total_steps"),
            std::string::npos);
  EXPECT_NE(error_of([] { WarmupCosineLr(1.0, -1, 3); }).find("warmup_steps"), std::string::npos);
  EXPECT_NE(error_of([] { WarmupCosineLr(1.0, 0, 0); }).find("total_steps >= 1"),
            std::string::npos);
  EXPECT_NE(error_of([] { WarmupCosineLr(1.0, 1, 10, 2.0); }).find("min_lr <= base_lr"),
            std::string::npos);
  EXPECT_NE(error_of([] { WarmupCosineLr(NAN, 1, 10); }).find("base_lr"), std::string::npos);
  EXPECT_NE(error_of([] { StepLr(1.0, 0, 0.5); }).find("step_size >= 1"), std::string::npos);
  EXPECT_NE(error_of([] { StepLr(1.0, 10, 0.0); }).find("gamma finite and > 0"), std::string::npos);
  // A gamma above 1 would grow the rate to infinity (2^1024 after 1024 decays).
  EXPECT_NE(error_of([] { StepLr(1.0, 1, 2.0); }).find("expected gamma <= 1, but got 2"),
            std::string::npos);
  EXPECT_NE(error_of([] { ConstantLr(1.0).lr_at(-1); }).find("step number >= 0"),
            std::string::npos);
}

}  // namespace
}  // namespace grove::optim
