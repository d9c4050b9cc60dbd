// The cost of core's views and copies on small tensors that do not require gradients: a new
// TensorImpl over the same storage (t, view, narrow), or a small copy (contiguous of a
// transposed tensor). What core spends on reporting them (Note [Core observers]) shows up here;
// BM_TObserved pays for one thread observer that ignores what it sees.
// Run: ./build/bench/view_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>

#include "core/core_observer.h"
#include "core/tensor.h"

namespace {

void BM_T(benchmark::State& state) {
  const grove::Tensor x = grove::zeros({4, 3});
  for (auto _ : state) {
    grove::Tensor y = x.t();
    benchmark::DoNotOptimize(y.impl());
  }
}
BENCHMARK(BM_T);

// x.t() with one thread observer that does nothing: the cost of a report.
void BM_TObserved(benchmark::State& state) {
  struct Ignore final : grove::CoreObserver {
    void on_derived(const grove::Tensor&, const grove::Tensor&, grove::DerivedKind,
                    grove::IntArrayRef) override {}
  } ignore;
  const grove::CoreObserverGuard guard(&ignore);
  const grove::Tensor x = grove::zeros({4, 3});
  for (auto _ : state) {
    grove::Tensor y = x.t();
    benchmark::DoNotOptimize(y.impl());
  }
}
BENCHMARK(BM_TObserved);

void BM_View(benchmark::State& state) {
  const grove::Tensor x = grove::zeros({4, 3});
  for (auto _ : state) {
    grove::Tensor y = x.view({12});
    benchmark::DoNotOptimize(y.impl());
  }
}
BENCHMARK(BM_View);

void BM_Narrow(benchmark::State& state) {
  const grove::Tensor x = grove::zeros({4, 3});
  for (auto _ : state) {
    grove::Tensor y = x.narrow(0, 1, 2);
    benchmark::DoNotOptimize(y.impl());
  }
}
BENCHMARK(BM_Narrow);

// A copy: allocation and a 12-element strided copy kernel.
void BM_ContiguousOfTransposed(benchmark::State& state) {
  const grove::Tensor x = grove::zeros({4, 3}).t();
  for (auto _ : state) {
    grove::Tensor y = x.contiguous();
    benchmark::DoNotOptimize(y.impl());
  }
}
BENCHMARK(BM_ContiguousOfTransposed);

}  // namespace

BENCHMARK_MAIN();
