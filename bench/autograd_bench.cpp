// Autograd overhead and the eager MLP training step on the CPU.
//
// - Recording: an add of two 1-element tensors with requires_grad (libtorch 1.13 on this machine
//   kind: 1.01-1.05 us, against 0.48-0.81 us without; ../shared/anchors/libtorch/RESULTS.md).
// - Backward overhead: a chain of 100 tiny ops, backward only (the forward is built with the
//   timer paused); the `per_node` counter is the time per node. Goal: at most 1 us per node.
// - MLP step: 784-256-256-10 with ReLU, batch 128, cross entropy, backward, SGD with momentum
//   0.9 as in-place ops. libtorch 1.13 with OpenBLAS, 2 threads: 1.11-1.15 ms median on this
//   machine kind (anchors); compare side by side with scripts/compare_libtorch.sh.
// Run: ./build/bench/autograd_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>

#include <cmath>

#include "autograd/autograd.h"
#include "bench/mlp_step.h"
#include "ops/elementwise.h"
#include "ops/inplace.h"
#include "ops/linalg.h"
#include "ops/random.h"
#include "ops/softmax.h"

namespace {

using namespace grove;
using namespace grove::ops;

void BM_AddRequiresGrad1Element(benchmark::State& state) {
  const Tensor a = full({1}, 1.5f).requires_grad_();
  const Tensor b = full({1}, 2.5f).requires_grad_();
  for (auto _ : state) {
    Tensor c = a + b;
    benchmark::DoNotOptimize(c.impl());
  }
}
BENCHMARK(BM_AddRequiresGrad1Element);

void BM_BackwardChain100(benchmark::State& state) {
  constexpr int kNodes = 100;
  const Tensor x = full({1}, 1.0f).requires_grad_();
  const Tensor one = full({1}, 1.0f);
  for (auto _ : state) {
    state.PauseTiming();
    Tensor y = x;
    for (int i = 0; i < kNodes; ++i) y = y + one;
    state.ResumeTiming();
    y.backward();
    state.PauseTiming();
    x.set_grad(Tensor());
    y = Tensor();  // frees the graph outside the timed region
    state.ResumeTiming();
  }
  state.counters["per_node"] = benchmark::Counter(
      kNodes, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_BackwardChain100);

// Forward and backward of the same chain, graph freed inside: the whole cost of a tiny op
// under autograd.
void BM_ForwardBackwardChain100(benchmark::State& state) {
  constexpr int kNodes = 100;
  const Tensor x = full({1}, 1.0f).requires_grad_();
  const Tensor one = full({1}, 1.0f);
  for (auto _ : state) {
    Tensor y = x;
    for (int i = 0; i < kNodes; ++i) y = y + one;
    y.backward();
    x.set_grad(Tensor());
  }
  state.counters["per_node"] = benchmark::Counter(
      kNodes, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_ForwardBackwardChain100);

void BM_MlpTrainStep(benchmark::State& state) {
  grove::bench::MlpStep step;              // bench/mlp_step.h, on the CPU
  for (int i = 0; i < 3; ++i) step.run();  // warm the allocator's cache
  for (auto _ : state) {
    step.run();
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_MlpTrainStep)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
