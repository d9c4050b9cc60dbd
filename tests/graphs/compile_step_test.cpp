// compile() across the orders training uses: gradient accumulation (F1 B1 F2 B2 ... then the
// update) and pipeline order (F1 F2 ... B2 B1), compared with eager mode bit for bit.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "compile_test_util.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "ops/softmax.h"

namespace grove::graphs {
namespace {

using namespace grove::graphs::testing;
using CompileStep = testing::TreeTest;

constexpr int kMicroBatches = 4;

struct Batch {
  Tensor x, t;
};

std::vector<Batch> micro_batches(int step) {
  std::vector<Batch> batches;
  for (int k = 0; k < kMicroBatches; ++k) {
    batches.push_back({input({6, 8}, 1000 + 10 * step + k), targets(6, 2000 + 10 * step + k)});
  }
  return batches;
}

std::vector<Tensor> gradients(const Mlp& mlp) {
  std::vector<Tensor> grads;
  for (const Tensor& p : mlp.parameters()) grads.push_back(p.grad().clone());
  return grads;
}

void expect_same_gradients(const std::vector<Tensor>& eager, const Mlp& mlp,
                           const std::string& what) {
  for (std::size_t i = 0; i < eager.size(); ++i) {
    expect_equal(eager[i], mlp.parameters()[i].grad(), what + " grad " + std::to_string(i));
  }
}

CompiledFunction compiled_loss(const Mlp& mlp) {
  return compile(
      [&](const TensorList& in) { return TensorList{cross_entropy(mlp.forward(in[0]), in[1])}; },
      quiet());
}

TEST_F(CompileStep, GradientAccumulationOverMicroBatchesEqualsEager) {
  on_fresh_thread([] {
    const Mlp mlp;
    CompiledFunction loss_of = compiled_loss(mlp);
    for (int step = 0; step < 3; ++step) {
      const std::vector<Batch> batches = micro_batches(step);
      mlp.zero_grad();
      for (const Batch& b : batches) cross_entropy(mlp.forward(b.x), b.t).backward();
      const std::vector<Tensor> eager = gradients(mlp);
      mlp.zero_grad();
      for (const Batch& b : batches) loss_of({b.x, b.t})[0].backward();
      expect_same_gradients(eager, mlp, "step " + std::to_string(step));
    }
    EXPECT_EQ(loss_of.stats().traces, 1u);
    const TreeCounters& counters = tree_manager(kTestDevice).counters();
    EXPECT_EQ(counters.eager_fallbacks, 0u);
    EXPECT_EQ(counters.poisoned_outputs, 0u);
    // Each forward-backward pair is a generation: recorded once (step 0's second pair), then
    // replayed by the other ten pairs.
    EXPECT_EQ(counters.recordings, 2u);
    EXPECT_EQ(counters.replays, 20u);
  });
}

// Attention splits one projection into q, k and v (chunk: three slices). Each slice's backward
// makes a zeros buffer and copies its gradient into part of it: a constant the backward writes,
// which must stay in the backward graph (it once became a forward output the tree manager
// refused: "neither allocated by the function nor one of its inputs").
TEST_F(CompileStep, SlicesOfAProductGetTheirGradientsThroughACompiledBackward) {
  on_fresh_thread([] {
    const Tensor w = parameter({12, 8}, 91);
    auto loss_of = [&](const TensorList& in) {
      const std::vector<Tensor> parts = chunk(linear(in[0], w), 3, 1);  // 3 x (6, 4)
      return TensorList{sum(parts[0] * parts[1] + parts[2])};
    };
    CompiledFunction compiled = compile(loss_of, quiet());
    for (int step = 0; step < 4; ++step) {
      const Tensor x = input({6, 8}, 300 + step);
      w.set_grad({});
      loss_of(TensorList{x})[0].backward();
      const Tensor eager = w.grad().clone();
      w.set_grad({});
      compiled(TensorList{x})[0].backward();
      expect_equal(eager, w.grad(), "grad at step " + std::to_string(step));
    }
    const TreeCounters& counters = tree_manager(kTestDevice).counters();
    EXPECT_EQ(counters.eager_fallbacks, 0u);
    EXPECT_GE(counters.replays, 2u);
  });
}

TEST_F(CompileStep, PipelineOrderEqualsEager) {
  on_fresh_thread([] {
    const Mlp mlp;
    CompiledFunction loss_of = compiled_loss(mlp);
    for (int step = 0; step < 3; ++step) {
      const std::vector<Batch> batches = micro_batches(step);
      mlp.zero_grad();
      std::vector<Tensor> losses;
      for (const Batch& b : batches) losses.push_back(cross_entropy(mlp.forward(b.x), b.t));
      for (int k = kMicroBatches - 1; k >= 0; --k) losses[k].backward();
      const std::vector<Tensor> eager = gradients(mlp);
      mlp.zero_grad();
      losses.clear();
      for (const Batch& b : batches) losses.push_back(loss_of({b.x, b.t})[0]);
      for (int k = kMicroBatches - 1; k >= 0; --k) losses[k].backward();
      expect_same_gradients(eager, mlp, "step " + std::to_string(step));
    }
    EXPECT_EQ(loss_of.stats().traces, 1u);
    const TreeCounters& counters = tree_manager(kTestDevice).counters();
    EXPECT_EQ(counters.eager_fallbacks, 0u);
    EXPECT_EQ(counters.poisoned_outputs, 0u);
    // Each backward is a node of its own, so no replay overwrites a saved activation another
    // backward still needs. Step 0: F1 traces (an eager run; B1 runs its graph interpreted),
    // F2 F3 F4 B4 B3 B2 record one path (the trace stood for their warm-up). Step 1 replays
    // that path's F F F and records F4 B4 B3 B2 B1 below it. Step 2 replays the eight nodes.
    EXPECT_EQ(counters.recordings, 6u + 5u);
    EXPECT_EQ(counters.replays, 3u + 8u);
  });
}

// Each micro-batch's forward and backward compiled as one graph (a whole step without the
// update): the first micro-batch of a step adopts the gradients, the others add into them, so
// the calls begin in two states and get a trace each; both replay from then on.
void expect_micro_batch_graphs_equal_eager(bool grads_to_none) {
  on_fresh_thread([&] {
    const Mlp mlp;
    CompiledFunction micro = compile(
        [&](const TensorList& in) {
          const Tensor loss = cross_entropy(mlp.forward(in[0]), in[1]);
          loss.backward();
          return TensorList{loss.detach()};
        },
        quiet());
    auto reset = [&] {
      for (const Tensor& p : mlp.parameters()) {
        if (grads_to_none || !p.grad().defined()) {
          p.set_grad({});
        } else {
          p.grad().zero_();
        }
      }
    };
    for (int step = 0; step < 4; ++step) {
      const std::vector<Batch> batches = micro_batches(step);
      reset();
      for (const Batch& b : batches) cross_entropy(mlp.forward(b.x), b.t).backward();
      const std::vector<Tensor> eager = gradients(mlp);
      reset();
      for (const Batch& b : batches) micro({b.x, b.t});
      expect_same_gradients(eager, mlp, "step " + std::to_string(step));
    }
    EXPECT_EQ(micro.stats().eager_calls, 0u);
    EXPECT_EQ(micro.stats().retraces, 0u);
    // One trace per state the calls begin in: gradients none (the first micro-batch after
    // zero_grad set them to none) and gradients there (the others, and every micro-batch when
    // zero_grad zeroes them in place, since the eager pass before made them).
    EXPECT_EQ(micro.stats().traces, grads_to_none ? 2u : 1u);
    EXPECT_EQ(tree_manager(kTestDevice).counters().eager_fallbacks, 0u);
    EXPECT_GE(tree_manager(kTestDevice).counters().replays, 8u);
  });
}

TEST_F(CompileStep, MicroBatchesAsOneGraphEachWithGradientsZeroedInPlace) {
  expect_micro_batch_graphs_equal_eager(/*grads_to_none=*/false);
}

TEST_F(CompileStep, MicroBatchesAsOneGraphEachWithGradientsSetToNone) {
  expect_micro_batch_graphs_equal_eager(/*grads_to_none=*/true);
}

}  // namespace
}  // namespace grove::graphs
