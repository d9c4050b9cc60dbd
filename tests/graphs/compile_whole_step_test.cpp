// A whole training step in one compiled graph: forward, backward(), the optimizer's update and
// zeroing the gradients, compared with the same step run eagerly, step by step; the learning
// rate in a tensor follows a schedule without a new recording.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "compile_test_util.h"
#include "ops/dispatch.h"
#include "ops/elementwise.h"
#include "ops/layer_norm.h"
#include "ops/optim.h"
#include "ops/reduce.h"
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
  Tensor lr = on_device(zeros({}, TensorOptions(DType::Float64)));  // written by the schedule
};

// Rates that change every step (a linear decay), or the options' fixed rate.
enum class Schedule { Fixed, EveryStep };
double rate_at(int step) {
  return 0.1 * (1.0 - static_cast<double>(step) / (2 * kSteps));
}

// One update op per parameter, or one over all of them (Note [One update over many parameters]
// in ops/optim.h).
enum class Optimizer { SgdMomentum, Adamw, SgdMomentumLists, AdamwLists };

// Where the step resets the gradients: zeroed in place after the update, set to none after it,
// or set to none before the forward (PyTorch's usual zero_grad() first; grad() then holds this
// step's gradients between steps).
enum class GradReset { ZeroAfter, NoneAfter, NoneBefore };

TensorList train_step(Trainee& trainee, Optimizer optimizer, Schedule schedule, GradReset reset,
                      const TensorList& in) {
  const bool scheduled = schedule == Schedule::EveryStep;
  if (reset == GradReset::NoneBefore) trainee.mlp.zero_grad();
  const Tensor loss = cross_entropy(trainee.mlp.forward(in[0]), in[1]);
  loss.backward();
  const autograd::NoGradGuard no_grad;
  const std::vector<Tensor> params = trainee.mlp.parameters();
  const bool sgd = optimizer == Optimizer::SgdMomentum || optimizer == Optimizer::SgdMomentumLists;
  const bool lists = optimizer == Optimizer::SgdMomentumLists || optimizer == Optimizer::AdamwLists;
  // The optimizer's state, made on the first step.
  if (sgd && trainee.velocity.empty()) {
    for (const Tensor& p : params) trainee.velocity.push_back(zeros_like(p));
  }
  if (!sgd && trainee.exp_avg.empty()) {
    for (const Tensor& p : params) {
      trainee.exp_avg.push_back(zeros_like(p));
      trainee.exp_avg_sq.push_back(zeros_like(p));
    }
  }
  if (!sgd) add_(trainee.step, trainee.one);
  const SgdHyperparameters sgd_options{.lr = 0.1, .momentum = 0.9};
  const AdamwHyperparameters adamw_options{.lr = 0.01};
  if (lists) {
    std::vector<Tensor> grads;
    for (const Tensor& p : params) grads.push_back(p.grad());
    const Tensor lr = scheduled ? trainee.lr : Tensor();
    if (sgd) {
      sgd_(params, grads, trainee.velocity, lr, sgd_options);
    } else {
      adamw_(params, grads, trainee.exp_avg, trainee.exp_avg_sq, trainee.step, lr, adamw_options);
    }
  } else {
    for (std::size_t i = 0; i < params.size(); ++i) {
      const Tensor& p = params[i];
      if (sgd && scheduled) sgd_(p, p.grad(), trainee.velocity[i], trainee.lr, sgd_options);
      if (sgd && !scheduled) sgd_(p, p.grad(), trainee.velocity[i], sgd_options);
      if (!sgd && scheduled) {
        adamw_(p, p.grad(), trainee.exp_avg[i], trainee.exp_avg_sq[i], trainee.step, trainee.lr,
               adamw_options);
      }
      if (!sgd && !scheduled) {
        adamw_(p, p.grad(), trainee.exp_avg[i], trainee.exp_avg_sq[i], trainee.step, adamw_options);
      }
    }
  }
  for (const Tensor& p : params) {
    if (reset == GradReset::NoneAfter) p.set_grad({});
    if (reset == GradReset::ZeroAfter) p.grad().zero_();
  }
  return {loss.detach()};
}

// train_step on `trainee`, compiled (quiet).
CompiledFunction compiled_step(Trainee& trainee, Optimizer optimizer, Schedule schedule,
                               GradReset reset) {
  return compile(
      [&trainee, optimizer, schedule, reset](const TensorList& in) {
        return train_step(trainee, optimizer, schedule, reset, in);
      },
      quiet());
}

// The compiled step against the eager one, which updates with `eager_optimizer` (by default the
// same); every call bumps the version of every parameter, replays included.
void expect_whole_step_equals_eager(Optimizer optimizer, Schedule schedule, GradReset reset,
                                    std::optional<Optimizer> eager_optimizer = std::nullopt) {
  on_fresh_thread([&] {
    Trainee eager, graphed;  // the same parameters (fixed seeds)
    CompiledFunction step = compiled_step(graphed, optimizer, schedule, reset);
    for (int s = 0; s < kSteps; ++s) {
      // The schedule writes the rate outside the step, into the tensor the graph reads.
      eager.lr.fill_(rate_at(s));
      graphed.lr.fill_(rate_at(s));
      const TensorList batch = {input({6, 8}, 500 + s), targets(6, 600 + s)};
      const Tensor expected =
          train_step(eager, eager_optimizer.value_or(optimizer), schedule, reset, batch)[0];
      std::vector<std::uint64_t> versions;
      for (const Tensor& p : graphed.mlp.parameters()) versions.push_back(p.version());
      const Tensor got = step(batch)[0];
      expect_equal(expected, got, "loss of step " + std::to_string(s));
      for (std::size_t i = 0; i < versions.size(); ++i) {
        EXPECT_GT(graphed.mlp.parameters()[i].version(), versions[i])
            << "parameter " << i << " in step " << s;
      }
      if (reset == GradReset::NoneBefore) {  // grad() holds this step's gradients
        for (std::size_t i = 0; i < eager.mlp.parameters().size(); ++i) {
          expect_equal(eager.mlp.parameters()[i].grad(), graphed.mlp.parameters()[i].grad(),
                       "grad " + std::to_string(i) + " after step " + std::to_string(s));
        }
      }
    }
    for (std::size_t i = 0; i < eager.mlp.parameters().size(); ++i) {
      expect_equal(eager.mlp.parameters()[i], graphed.mlp.parameters()[i],
                   "parameter " + std::to_string(i));
    }
    // Call 1 traces and makes the optimizer's state; call 2 traces again, finding it (the trace
    // is that call's eager run, standing for the warm-up); call 3 records; every later call
    // replays, whatever the learning rate.
    EXPECT_EQ(step.stats().traces, 2u);
    EXPECT_EQ(step.stats().eager_calls, 0u);
    const TreeCounters& counters = tree_manager(kTestDevice).counters();
    EXPECT_EQ(counters.eager_fallbacks, 0u);
    EXPECT_EQ(counters.recordings, 1u);
    EXPECT_EQ(counters.replays, static_cast<std::uint64_t>(kSteps - 3));
  });
}

TEST_F(CompileWholeStep, SgdWithMomentumAndAScheduleEqualsEagerStepByStep) {
  expect_whole_step_equals_eager(Optimizer::SgdMomentum, Schedule::EveryStep, GradReset::ZeroAfter);
}

TEST_F(CompileWholeStep, SgdWithAFixedRateAndGradientsSetToNoneEqualsEager) {
  expect_whole_step_equals_eager(Optimizer::SgdMomentum, Schedule::Fixed, GradReset::NoneAfter);
}

TEST_F(CompileWholeStep, AdamwWithAScheduleEqualsEagerStepByStep) {
  expect_whole_step_equals_eager(Optimizer::Adamw, Schedule::EveryStep, GradReset::ZeroAfter);
}

TEST_F(CompileWholeStep, ZeroGradFirstLeavesEachStepsGradientsInGrad) {
  expect_whole_step_equals_eager(Optimizer::SgdMomentum, Schedule::EveryStep,
                                 GradReset::NoneBefore);
}

TEST_F(CompileWholeStep, AdamwWithAFixedRateEqualsEagerStepByStep) {
  expect_whole_step_equals_eager(Optimizer::Adamw, Schedule::Fixed, GradReset::ZeroAfter);
}

// An epoch's last, smaller batch is a second signature with gradient buffers of its own; each
// trace puts its buffers into grad() in turn, dropping the other's, which must not count as a
// replaced parameter (that would trace both again every epoch).
TEST_F(CompileWholeStep, TwoBatchSizesTakingTurnsKeepTheirTraces) {
  on_fresh_thread([&] {
    Trainee eager, graphed;
    CompiledFunction step =
        compiled_step(graphed, Optimizer::SgdMomentum, Schedule::Fixed, GradReset::NoneBefore);
    constexpr int kEpochs = 6;
    for (int s = 0; s < 2 * kEpochs; ++s) {
      const std::int64_t rows = s % 2 == 0 ? 6 : 2;
      const TensorList batch = {input({rows, 8}, 700 + s), targets(rows, 800 + s)};
      const Tensor expected = train_step(eager, Optimizer::SgdMomentum, Schedule::Fixed,
                                         GradReset::NoneBefore, batch)[0];
      expect_equal(expected, step(batch)[0], "loss of step " + std::to_string(s));
    }
    // Each size: a trace making the velocity (the first only), a trace, a warm-up, a recording.
    EXPECT_EQ(step.stats().retraces, 0u);
    EXPECT_EQ(step.stats().traces, 3u);
    EXPECT_EQ(tree_manager(kTestDevice).counters().recordings, 2u);
  });
}

// Notes the storages that ops wrote their outputs into, on this thread.
class OutputStorages final : public ops::OpObserver {
 public:
  void on_op(const ops::OpCall& /*call*/, const ops::OpOutputs& outputs) override {
    for (const Tensor& output : outputs.span()) storages.push_back(output.storage().get());
  }
  std::vector<const Storage*> storages;
};

// Note [Writing into the copy's target]: with zero_grad first, the gradients the step makes are
// written by the ops that make them straight into the buffers grad() keeps, with no copy after
// (in the warm-up and in the recording, which the replays repeat); the values stay eager's.
// One update op over every parameter, compiled, against one op per parameter run eagerly.
TEST_F(CompileWholeStep, SgdOverAllParametersInOneOpEqualsOneOpPerParameter) {
  expect_whole_step_equals_eager(Optimizer::SgdMomentumLists, Schedule::EveryStep,
                                 GradReset::ZeroAfter, Optimizer::SgdMomentum);
}

TEST_F(CompileWholeStep, AdamwOverAllParametersInOneOpEqualsOneOpPerParameter) {
  expect_whole_step_equals_eager(Optimizer::AdamwLists, Schedule::Fixed, GradReset::NoneBefore,
                                 Optimizer::Adamw);
}

TEST_F(CompileWholeStep, TheGradientsAreWrittenStraightIntoTheirBuffers) {
  on_fresh_thread([&] {
    Trainee eager, graphed;
    CompiledFunction step =
        compiled_step(graphed, Optimizer::SgdMomentum, Schedule::Fixed, GradReset::NoneBefore);
    for (int s = 0; s < 6; ++s) {
      const TensorList batch = {input({6, 8}, 900 + s), targets(6, 950 + s)};
      const Tensor expected = train_step(eager, Optimizer::SgdMomentum, Schedule::Fixed,
                                         GradReset::NoneBefore, batch)[0];
      OutputStorages written;
      Tensor got;
      {
        const ops::OpObserverGuard observing(&written);
        got = step(batch)[0];
      }
      expect_equal(expected, got, "loss of step " + std::to_string(s));
      const std::vector<Tensor> params = graphed.mlp.parameters();
      for (std::size_t i = 0; i < params.size(); ++i) {
        expect_equal(eager.mlp.parameters()[i].grad(), params[i].grad(),
                     "grad " + std::to_string(i) + " after step " + std::to_string(s));
        // Call 3 runs the graph's ops (the recording); 1 and 2 trace the function, which makes
        // each gradient in memory of its own and copies it once.
        if (s == 2) {
          const Storage* buffer = params[i].grad().storage().get();
          EXPECT_NE(std::find(written.storages.begin(), written.storages.end(), buffer),
                    written.storages.end())
              << "no op wrote parameter " << i << "'s gradient buffer in call " << s + 1;
        }
      }
    }
    EXPECT_EQ(tree_manager(kTestDevice).counters().recordings, 1u);
    EXPECT_EQ(tree_manager(kTestDevice).counters().replays, 3u);
  });
}

// The same for an op with several outputs: a layer norm's backward writes its weight and bias
// gradients (outputs 1 and 2) straight into their buffers; the values stay eager's.
TEST_F(CompileWholeStep, ALayerNormsParameterGradientsAreWrittenStraightIntoTheirBuffers) {
  on_fresh_thread([&] {
    auto leaf = [](std::uint64_t seed) {
      return on_device(input({8}, seed)).detach().requires_grad_();
    };
    const Tensor weight = leaf(31), bias = leaf(32);
    const Tensor eager_weight = weight.detach().clone().requires_grad_();
    const Tensor eager_bias = bias.detach().clone().requires_grad_();
    auto step_of = [](const Tensor& w, const Tensor& b, const Tensor& x) {
      w.set_grad({});
      b.set_grad({});
      const Tensor loss = ops::sum(ops::mul(ops::layer_norm(x, {8}, w, b), x));
      loss.backward();
      return loss;
    };
    CompiledFunction step = compile(
        [&](const TensorList& in) { return TensorList{step_of(weight, bias, in[0])}; }, quiet());
    for (int s = 0; s < 5; ++s) {
      const Tensor x = on_device(input({6, 8}, 970 + s));
      const Tensor expected = step_of(eager_weight, eager_bias, x);
      OutputStorages written;
      Tensor got;
      {
        const ops::OpObserverGuard observing(&written);
        got = step(TensorList{x})[0];
      }
      expect_equal(expected, got, "loss of step " + std::to_string(s));
      expect_equal(eager_weight.grad(), weight.grad(), "weight grad of step " + std::to_string(s));
      expect_equal(eager_bias.grad(), bias.grad(), "bias grad of step " + std::to_string(s));
      if (s == 2) {  // the recording runs the graph's ops
        for (const Tensor& grad : {weight.grad(), bias.grad()}) {
          EXPECT_NE(
              std::find(written.storages.begin(), written.storages.end(), grad.storage().get()),
              written.storages.end())
              << "no op wrote a layer norm gradient's buffer in call " << s + 1;
        }
      }
    }
  });
}

}  // namespace
}  // namespace grove::graphs
