// Host overhead of the graph-tree manager's hot path: replaying an already recorded node.
//
// The functions launch no kernels (their graphs are empty), so what is timed is the manager
// alone: generation bookkeeping, finding the child whose invariants hold, the invariant checks,
// copying non-static inputs (a kernel launch each), the replay call and handing out fresh output
// handles. Goal: at most 5 us per replay with 4 inputs and 4 outputs on the CPU stream (PyTorch's
// Python tree manager spends about 128 us per call in a published profile).
// Run: ./build/bench/tree_manager_bench --benchmark_repetitions=5
// --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>

#include "graphs/tree/generation.h"
#include "graphs/tree/tree_manager.h"

namespace {

using grove::Tensor;
using grove::graphs::TensorList;

// 4 inputs, 4 fresh outputs, no kernels.
grove::graphs::WrappedFunction four_by_four(std::vector<int> static_inputs) {
  grove::graphs::WrappedFunction function;
  function.name = "four_by_four";
  function.static_input_indices = std::move(static_inputs);
  function.callable = [](const TensorList& inputs) {
    TensorList outputs;
    for (const Tensor& input : inputs) outputs.push_back(grove::empty(input.sizes()));
    return outputs;
  };
  return function;
}

TensorList four_inputs() {
  return {grove::zeros({16}), grove::zeros({16}), grove::zeros({16}), grove::zeros({16})};
}

grove::graphs::TreeOptions bench_options() {
  grove::graphs::TreeOptions options;
  options.print_warnings = false;
  return options;
}

// One node replayed per iteration; every call is a new step (inference mode).
void BM_ReplayOneNode(benchmark::State& state) {
  const bool static_inputs = state.range(0) == 1;
  grove::graphs::TreeManager manager(grove::kCPU, bench_options());
  auto f = manager.add_function(
      four_by_four(static_inputs ? std::vector<int>{0, 1, 2, 3} : std::vector<int>{}));
  TensorList inputs = four_inputs();
  for (int warm = 0; warm < 3; ++warm) f(inputs);  // warm-up, record, first replay
  for (auto _ : state) {
    TensorList outputs = f(inputs);
    benchmark::DoNotOptimize(outputs.data());
  }
  state.counters["replays"] = static_cast<double>(manager.counters().replays);
  state.SetLabel(static_inputs ? "4 static inputs" : "4 copied inputs");
}
BENCHMARK(BM_ReplayOneNode)->Arg(1)->Arg(0);

// A path of three nodes (a -> b -> c, each output feeding the next), one step per iteration.
void BM_ReplayThreeNodePath(benchmark::State& state) {
  grove::graphs::TreeManager manager(grove::kCPU, bench_options());
  auto a = manager.add_function(four_by_four({0, 1, 2, 3}));
  auto b = manager.add_function(four_by_four({}));
  auto c = manager.add_function(four_by_four({}));
  TensorList inputs = four_inputs();
  auto step = [&] {
    grove::graphs::mark_step_begin();
    TensorList x = a(inputs);
    TensorList y = b(x);
    return c(y);
  };
  for (int warm = 0; warm < 3; ++warm) step();
  for (auto _ : state) {
    TensorList outputs = step();
    benchmark::DoNotOptimize(outputs.data());
  }
  state.counters["replays_per_step"] =
      static_cast<double>(manager.counters().replays) / static_cast<double>(state.iterations() + 1);
}
BENCHMARK(BM_ReplayThreeNodePath);

}  // namespace

BENCHMARK_MAIN();
