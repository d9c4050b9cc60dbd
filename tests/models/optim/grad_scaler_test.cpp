// GradScaler (models/optim/grad_scaler.h): unscaling, an overflowed step skipped whole (the
// parameters, the optimizer's state and its step count untouched) with the scale halved, growth
// after a run of clean steps, and a compiled whole fp16 step with injected overflows that equals
// the eager one bit for bit with host reads made errors (no read happens inside the step).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "graphs/compile/compile.h"
#include "graphs/tree/tree_manager.h"
#include "models/optim/adamw.h"
#include "models/optim/clip.h"
#include "models/optim/grad_scaler.h"
#include "models/optim/sgd.h"
#include "ops/autocast.h"
#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "ops/random.h"
#include "ops/reduce.h"
#include "optim_test_util.h"

namespace grove::optim {
namespace {

using namespace testing;

constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor random_tensor(IntArrayRef sizes, std::uint64_t seed) {
  Generator generator(seed);
  return ops::randn(sizes, {}, &generator);
}

TEST(GradScaler, UnscaleDividesTheGradientsAndFindsOverflows) {
  const Tensor p = parameter({1.0, 2.0}, DType::Float32);
  const Tensor q = parameter({3.0}, DType::Float32);
  SGD sgd({p, q}, SgdOptions{.lr = 0.1});
  GradScaler scaler(kCPU, {.init_scale = 8.0});
  set_grad(p, {8.0, -4.0});
  set_grad(q, {2.0});
  scaler.unscale_(sgd);
  EXPECT_EQ(values_of(p.grad()), (std::vector<double>{1.0, -0.5}));
  EXPECT_EQ(values_of(q.grad()), (std::vector<double>{0.25}));
  EXPECT_EQ(scaler.found_inf().item<float>(), 0.0f);
  EXPECT_NE(error_of([&] { scaler.unscale_(sgd); }).find("already called"), std::string::npos);
  scaler.update();
  set_grad(q, {std::nan("")});
  scaler.unscale_(sgd);
  EXPECT_EQ(scaler.found_inf().item<float>(), 1.0f);
}

TEST(GradScaler, AnOverflowSkipsExactlyThatStepAndHalvesTheScale) {
  const Tensor p = parameter({1.0, -1.0, 0.5}, DType::Float32);
  AdamW adamw({p}, AdamwOptions{.lr = 0.1, .weight_decay = 0.1});
  GradScaler scaler(kCPU, {.init_scale = 1024.0, .growth_interval = 100});
  auto step = [&](std::vector<double> scaled_grad) {
    set_grad(p, scaled_grad);
    scaler.step(adamw);
    scaler.update();
  };
  step({1024.0, 512.0, -256.0});
  const std::vector<double> after_first = values_of(p);
  EXPECT_NE(after_first, (std::vector<double>{1.0, -1.0, 0.5}));
  const Optimizer::NamedState state_before = adamw.state();
  std::vector<std::vector<double>> saved;
  for (const auto& [name, tensor] : state_before) saved.push_back(values_of(tensor));
  step({kInf, 1.0, 1.0});  // overflowed: nothing moves
  EXPECT_EQ(values_of(p), after_first);
  const Optimizer::NamedState state_after = adamw.state();
  for (std::size_t i = 0; i < saved.size(); ++i) {
    EXPECT_EQ(values_of(state_after[i].second), saved[i]) << state_after[i].first;
  }
  EXPECT_EQ(adamw.step_tensor().item<std::int64_t>(), 1);  // the skipped step does not count
  EXPECT_EQ(scaler.scale_value(), 512.0);
  EXPECT_EQ(scaler.growth_tracker().item<std::int32_t>(), 0);
  step({512.0, 512.0, 512.0});  // the next one updates again, as step 2 of AdamW
  EXPECT_NE(values_of(p), after_first);
  EXPECT_EQ(adamw.step_tensor().item<std::int64_t>(), 2);
}

TEST(GradScaler, GrowsAfterGrowthIntervalCleanSteps) {
  const Tensor p = parameter({1.0}, DType::Float32);
  SGD sgd({p}, SgdOptions{.lr = 0.1});
  GradScaler scaler(kCPU, {.init_scale = 4.0, .growth_interval = 3});
  for (int s = 0; s < 3; ++s) {
    EXPECT_EQ(scaler.scale_value(), 4.0) << s;
    set_grad(p, {4.0});
    scaler.step(sgd);
    scaler.update();
  }
  EXPECT_EQ(scaler.scale_value(), 8.0);
  EXPECT_EQ(scaler.growth_tracker().item<std::int32_t>(), 0);
  // Each step moved p by lr * (4 / 4) = 0.1.
  EXPECT_NEAR(values_of(p)[0], 0.7, 1e-6);
}

TEST(GradScaler, RefusesOptionsOutOfRange) {
  EXPECT_NE(error_of([] { GradScaler(kCPU, {.init_scale = 0.0}); }).find("init_scale"),
            std::string::npos);
  EXPECT_NE(error_of([] { GradScaler(kCPU, {.growth_factor = 1.0}); }).find("growth_factor"),
            std::string::npos);
  EXPECT_NE(error_of([] { GradScaler(kCPU, {.backoff_factor = 1.0}); }).find("backoff_factor"),
            std::string::npos);
  EXPECT_NE(error_of([] { GradScaler(kCPU, {.growth_interval = 0}); }).find("growth_interval"),
            std::string::npos);
}

// A linear regression trained in float16 with loss scaling; the batch of step kOverflowStep
// holds an infinity, so its gradients overflow.
constexpr int kSteps = 10;
constexpr int kOverflowStep = 4;

struct Fp16Trainee {
  Tensor weight = random_tensor({3, 4}, 1).requires_grad_();
  Tensor bias = random_tensor({3}, 2).requires_grad_();
  AdamW adamw{{weight, bias}, AdamwOptions{.lr = 0.01, .weight_decay = 0.1}};
  GradScaler scaler{kCPU, {.init_scale = 256.0, .growth_interval = 3}};

  graphs::TensorList step(const graphs::TensorList& in) {
    Tensor loss;
    {
      const AutocastGuard autocast(DType::Float16);
      const Tensor error = ops::sub(ops::linear(in[0], weight, bias), in[1]);  // float16 - f32
      loss = ops::mean(ops::mul(error, error));
    }
    scaler.scale(loss).backward();
    scaler.unscale_(adamw);
    clip_grad_norm_({weight, bias}, 1.0);
    scaler.step(adamw);
    scaler.update();
    adamw.zero_grad(/*set_to_none=*/false);
    return {loss.detach()};
  }
};

TEST(GradScaler, ACompiledFp16StepWithOverflowsEqualsEagerAndReadsNothingOnTheHost) {
  on_fresh_thread([] {
    Fp16Trainee eager, graphed;
    graphs::CompileOptions options;
    options.or_error = true;  // a host read inside the step would throw
    options.print_warnings = false;
    graphs::CompiledFunction step =
        graphs::compile([&](const graphs::TensorList& in) { return graphed.step(in); }, options);
    for (int s = 0; s < kSteps; ++s) {
      Tensor x = random_tensor({5, 4}, 100 + s);
      if (s == kOverflowStep) x = ops::mul(x, kInf);
      const graphs::TensorList batch = {x, random_tensor({5, 3}, 200 + s)};
      const std::vector<double> weight_before = values_of(eager.weight);
      const std::vector<double> expected = values_of(eager.step(batch)[0]);
      const std::vector<double> got = values_of(step(batch)[0]);
      const std::string when = " at step " + std::to_string(s);
      if (s == kOverflowStep) {
        EXPECT_EQ(values_of(eager.weight), weight_before) << "the overflowed step moved" << when;
      } else {
        EXPECT_EQ(expected, got) << "loss" << when;
      }
      EXPECT_EQ(values_of(eager.weight), values_of(graphed.weight)) << when;
      EXPECT_EQ(values_of(eager.scaler.scale_tensor()), values_of(graphed.scaler.scale_tensor()))
          << when;
    }
    // 256: grown at the third clean step (512), halved at the overflow (256), grown again
    // three clean steps later (512), and steps 8 and 9 do not reach the next growth.
    EXPECT_EQ(graphed.scaler.scale_value(), 512.0);
    EXPECT_EQ(graphed.adamw.step_tensor().item<std::int64_t>(), kSteps - 1);
    EXPECT_EQ(step.stats().eager_calls, 0u);
    EXPECT_GE(graphs::tree_manager(kCPU).counters().replays, 1u);
  });
}

}  // namespace
}  // namespace grove::optim
