// The optimizers inside a compiled whole training step (forward, backward, clipping, update,
// zero_grad in one graph; Note [Optimizer state lives on the device]): with host reads made
// errors (or_error), the step replays, and parameters and state equal an eager run bit for bit
// on every step, while a schedule changes the rate between steps without a new recording.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "graphs/compile/compile.h"
#include "graphs/tree/tree_manager.h"
#include "models/optim/adamw.h"
#include "models/optim/clip.h"
#include "models/optim/schedule.h"
#include "models/optim/sgd.h"
#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "ops/random.h"
#include "ops/reduce.h"
#include "optim_test_util.h"

namespace grove::optim {
namespace {

using namespace testing;

constexpr int kSteps = 12;

Tensor random_tensor(IntArrayRef sizes, std::uint64_t seed) {
  Generator generator(seed);
  return ops::randn(sizes, {}, &generator);
}

// A linear regression and its optimizer; both copies start from the same values.
struct Trainee {
  Tensor weight = random_tensor({3, 4}, 1).requires_grad_();
  Tensor bias = random_tensor({3}, 2).requires_grad_();
  std::unique_ptr<Optimizer> optimizer;

  explicit Trainee(bool use_adamw) {
    if (use_adamw) {
      optimizer = std::make_unique<AdamW>(std::vector<Tensor>{weight, bias},
                                          AdamwOptions{.lr = 0.01, .weight_decay = 0.1});
    } else {
      optimizer = std::make_unique<SGD>(
          std::vector<Tensor>{weight, bias},
          SgdOptions{.lr = 0.01, .momentum = 0.9, .weight_decay = 0.01, .nesterov = true});
    }
  }

  // One whole step: loss, backward, clipping, update, gradients zeroed in place.
  graphs::TensorList step(const graphs::TensorList& in) {
    const Tensor error = ops::sub(ops::linear(in[0], weight, bias), in[1]);  // (N, 3)
    const Tensor loss = ops::mean(ops::mul(error, error));
    loss.backward();
    const Tensor norm = clip_grad_norm_({weight, bias}, 0.5);
    optimizer->step();
    optimizer->zero_grad(/*set_to_none=*/false);
    return {loss.detach(), norm};
  }
};

void expect_compiled_equals_eager(bool use_adamw) {
  on_fresh_thread([&] {
    Trainee eager(use_adamw), graphed(use_adamw);
    graphs::CompileOptions options;
    options.or_error = true;  // a host read in the step would throw instead of running eagerly
    options.print_warnings = false;
    graphs::TreeOptions tree_options;
    tree_options.debug_checks = true;  // pool accounting checked after every recording
    tree_options.print_warnings = false;
    options.tree_options = tree_options;
    graphs::CompiledFunction step =
        graphs::compile([&](const graphs::TensorList& in) { return graphed.step(in); }, options);
    const WarmupCosineLr schedule(0.05, 3, kSteps, 0.005);
    for (int s = 0; s < kSteps; ++s) {
      schedule.apply(*eager.optimizer, s);
      schedule.apply(*graphed.optimizer, s);
      const graphs::TensorList batch = {random_tensor({5, 4}, 100 + s),
                                        random_tensor({5, 3}, 200 + s)};
      const graphs::TensorList expected = eager.step(batch);
      const graphs::TensorList got = step(batch);
      const std::string when = " at step " + std::to_string(s);
      EXPECT_EQ(values_of(expected[0]), values_of(got[0])) << "loss" << when;
      EXPECT_EQ(values_of(expected[1]), values_of(got[1])) << "gradient norm" << when;
      const Optimizer::NamedState want = eager.optimizer->state();
      const Optimizer::NamedState have = graphed.optimizer->state();
      for (std::size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(values_of(want[i].second), values_of(have[i].second)) << want[i].first << when;
      }
    }
    EXPECT_EQ(values_of(eager.weight), values_of(graphed.weight));
    EXPECT_EQ(values_of(eager.bias), values_of(graphed.bias));
    EXPECT_EQ(graphed.optimizer->step_tensor().item<std::int64_t>(), kSteps);
    EXPECT_EQ(step.stats().eager_calls, 0u);
    const graphs::TreeCounters& counters = graphs::tree_manager(kCPU).counters();
    EXPECT_EQ(counters.eager_fallbacks, 0u);
    // Call 1 traces (its grads begin undefined: backward adopts them) and ran the step for real;
    // call 2 traces again (grads begin zeroed: backward adds), its eager run standing for the
    // warm-up; call 3 records, and every later call replays, whatever the learning rate.
    EXPECT_EQ(step.stats().traces, 2u);
    EXPECT_EQ(counters.warmups, 0u);
    EXPECT_EQ(counters.recordings, 1u);
    EXPECT_EQ(counters.replays, static_cast<std::uint64_t>(kSteps - 3));
  });
}

TEST(CompiledStep, SgdWithClippingAndAScheduleEqualsEager) {
  expect_compiled_equals_eager(/*use_adamw=*/false);
}

TEST(CompiledStep, AdamwWithClippingAndAScheduleEqualsEager) {
  expect_compiled_equals_eager(/*use_adamw=*/true);
}

}  // namespace
}  // namespace grove::optim
