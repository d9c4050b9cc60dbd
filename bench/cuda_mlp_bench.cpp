// The eager MLP training step on a CUDA device, written with ops directly: 784-256-256-10 with
// ReLU, batch 128, cross entropy, backward, SGD with momentum 0.9 as in-place ops (the same step
// as autograd_bench's BM_MlpTrainStep on the CPU).
//
// Goal (issue 6): at most 300 us median on an H200, where PyTorch eager takes 956 us and the
// whole step captured by hand into one CUDA graph 122 us (../shared/anchors/README.md).
// Timing follows the anchor's pytorch_gpu_bench.py: 50 steps back to back, one synchronise,
// time per step; the median over repetitions is the figure to quote.
// BM_MlpTrainStepFusedSgd takes the same step with one fused sgd_ per parameter.
// BM_MlpTrainStepCaptured replays the same step captured into one DeviceGraph: its time is the
// GPU-side floor of grove's kernels for this step, with no dispatch at all.
// Measured (H200, medians of 5, --benchmark_min_time=0.2, 2026-11-22; us per step):
//   in-place SGD  351 | 232 | 224, 233, 240 | 254 | 219 | 213   (six machines)
//   fused sgd_    283 | 187 | 172, 196, 183 | 200 | 175 | 166
//   captured       99 |  99 |  99,  99,  99 |  99 |  99 |  99   (46 graph nodes)
//   phases of the in-place step (host, us): forward 51-64, backward 92-115, update 67-84.
// In the last run, PyTorch 2.11 on the same machine (../shared/anchors/pytorch_gpu_bench.py):
// eager 797 us, the whole step captured by hand 121.9 us; so grove's eager step took 0.27x
// PyTorch's eager time and its captured step 0.81x PyTorch's captured one.
// The eager step is host-bound: ~36 launches at 3.5-4.5 us plus 8 cuBLASLt calls at ~9.5 us
// (BM_CublasLtHostTime) come to ~200 us before any grove overhead. The first machine was slow
// on the host throughout (cuBLASLt calls 30% slower than on the others). PyTorch eager: 956 us.
// Run: ./build/bench/cuda_mlp_bench --benchmark_repetitions=7 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>

#include <chrono>

#include "bench/mlp_step.h"
#include "core/device_graph.h"
#include "core/stream.h"

namespace {

using namespace grove;
using namespace grove::ops;
using Clock = std::chrono::steady_clock;
using grove::bench::MlpStep;

constexpr int kStepsPerTiming = 50;

// Runs `step` kStepsPerTiming times per iteration (then synchronises); the counter us_per_step
// is the figure to read.
template <typename Step>
void time_steps(benchmark::State& state, Device device, Step step) {
  for (int i = 0; i < 20; ++i) step();  // warm the allocator's cache and cuBLAS/cuDNN plans
  synchronize(current_stream(device));
  double seconds = 0.0;
  for (auto _ : state) {
    const auto start = Clock::now();
    for (int i = 0; i < kStepsPerTiming; ++i) step();
    synchronize(current_stream(device));
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    state.SetIterationTime(elapsed);
    seconds += elapsed;
  }
  state.counters["us_per_step"] =
      seconds * 1e6 / (static_cast<double>(state.iterations()) * kStepsPerTiming);
}

void BM_MlpTrainStep(benchmark::State& state) {
  if (!cuda_is_available()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  MlpStep step(cuda(0));
  time_steps(state, step.device, [&] { step.run(); });
}
BENCHMARK(BM_MlpTrainStep)->UseManualTime()->Unit(benchmark::kMicrosecond);

// The same step with the fused SGD update (ops/optim.h): 6 launches instead of 18.
void BM_MlpTrainStepFusedSgd(benchmark::State& state) {
  if (!cuda_is_available()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  MlpStep step(cuda(0), /*fused_sgd=*/true);
  time_steps(state, step.device, [&] { step.run(); });
}
BENCHMARK(BM_MlpTrainStepFusedSgd)->UseManualTime()->Unit(benchmark::kMicrosecond);

// The host time of each phase of the in-place step, with no synchronise inside a step: the GPU
// finishes a step's work in ~100 us (BM_MlpTrainStepCaptured), well under the host's time, so the
// queue stays short and these are the host's costs. Counters in us per step.
void BM_MlpTrainStepPhases(benchmark::State& state) {
  if (!cuda_is_available()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  MlpStep step(cuda(0));
  for (int i = 0; i < 20; ++i) step.run();
  synchronize(current_stream(step.device));
  double forward = 0.0, backward = 0.0, update = 0.0;
  const auto seconds = [](Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration<double>(to - from).count();
  };
  for (auto _ : state) {
    double total = 0.0;
    for (int i = 0; i < kStepsPerTiming; ++i) {
      const auto t0 = Clock::now();
      const Tensor loss = step.forward();
      const auto t1 = Clock::now();
      loss.backward();
      const auto t2 = Clock::now();
      step.update();
      const auto t3 = Clock::now();
      forward += seconds(t0, t1);
      backward += seconds(t1, t2);
      update += seconds(t2, t3);
      total += seconds(t0, t3);
    }
    state.SetIterationTime(total);
    synchronize(current_stream(step.device));
  }
  const double steps = static_cast<double>(state.iterations()) * kStepsPerTiming;
  state.counters["us_forward"] = forward * 1e6 / steps;
  state.counters["us_backward"] = backward * 1e6 / steps;
  state.counters["us_update"] = update * 1e6 / steps;
}
BENCHMARK(BM_MlpTrainStepPhases)->UseManualTime()->Unit(benchmark::kMicrosecond);

void BM_MlpTrainStepCaptured(benchmark::State& state) {
  if (!cuda_is_available()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  MlpStep step(cuda(0));
  for (int i = 0; i < 3; ++i) step.run();  // eager warm-up: plans and workspaces exist
  synchronize(current_stream(step.device));
  DeviceGraph graph(step.device);
  try {
    graph.begin_capture(current_stream(step.device));
    step.run();
    graph.end_capture();
  } catch (const std::exception& error) {
    state.SkipWithError(error.what());
    return;
  }
  state.counters["nodes"] = static_cast<double>(graph.num_nodes());
  time_steps(state, step.device, [&] { graph.replay(); });
}
BENCHMARK(BM_MlpTrainStepCaptured)->UseManualTime()->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
