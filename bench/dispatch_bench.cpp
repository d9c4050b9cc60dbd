// Eager dispatch overhead: an op on 1-element tensors, output allocation included, so the time
// is all overhead (checks, shape inference, allocation, kernel launch, observers: autograd's
// recorder, linked into this program, runs for every op; see Note [Op observers]).
//
// Anchor: libtorch 1.13 (Debian) took 0.48-0.81 us median for `a + b` of two 1-element tensors
// on this machine kind (../shared/anchors/); the goal is at most half of that, measured side by
// side. Run: ./build/bench/dispatch_bench --benchmark_repetitions=5
// --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>

#include "ops/dispatch.h"
#include "ops/elementwise.h"

namespace {

void BM_Add1Element(benchmark::State& state) {
  grove::Tensor a = grove::full({1}, 1.5f);
  grove::Tensor b = grove::full({1}, 2.5f);
  for (auto _ : state) {
    grove::Tensor c = a + b;
    benchmark::DoNotOptimize(c.impl());
  }
}
BENCHMARK(BM_Add1Element);

void BM_AddScalar1Element(benchmark::State& state) {
  grove::Tensor a = grove::full({1}, 1.5f);
  for (auto _ : state) {
    grove::Tensor c = a + 2.0f;
    benchmark::DoNotOptimize(c.impl());
  }
}
BENCHMARK(BM_AddScalar1Element);

void BM_Relu1Element(benchmark::State& state) {
  grove::Tensor a = grove::full({1}, 1.5f);
  for (auto _ : state) {
    grove::Tensor c = grove::ops::relu(a);
    benchmark::DoNotOptimize(c.impl());
  }
}
BENCHMARK(BM_Relu1Element);

// With one thread observer that does nothing (a tracer's cost before it records anything).
void BM_Add1ElementObserved(benchmark::State& state) {
  struct Ignore final : grove::ops::OpObserver {
    void on_op(const grove::ops::OpCall&, const grove::ops::OpOutputs&) override {}
  } ignore;
  const grove::ops::OpObserverGuard guard(&ignore);
  grove::Tensor a = grove::full({1}, 1.5f);
  grove::Tensor b = grove::full({1}, 2.5f);
  for (auto _ : state) {
    grove::Tensor c = a + b;
    benchmark::DoNotOptimize(c.impl());
  }
}
BENCHMARK(BM_Add1ElementObserved);

// The floor under every op: allocating its output tensor.
void BM_EmptyOutput1Element(benchmark::State& state) {
  for (auto _ : state) {
    grove::Tensor c = grove::empty({1});
    benchmark::DoNotOptimize(c.impl());
  }
}
BENCHMARK(BM_EmptyOutput1Element);

}  // namespace

BENCHMARK_MAIN();
