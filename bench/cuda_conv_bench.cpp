// conv2d (cuDNN) and pooling on a CUDA device at the reference CNN's shapes, batch 128, float32:
//   layer 1: (128, 1, 28, 28) * (32, 1, 3, 3), padding 1, then max_pool2d 2 on (128, 32, 28, 28)
//   layer 2: (128, 32, 14, 14) * (64, 32, 3, 3), padding 1, then max_pool2d 2 on (128, 64, 14, 14)
// Convolutions report TFLOP/s of 2 N O Ho Wo C kH kW flops (each of forward, backward input and
// backward weight does that many), with TF32 off (the default) and on; pooling reports time.
// Time from CUDA events around kCalls calls (UseManualTime; the counter us_per_call is the
// figure to read, and TFLOP/s is per call too): launched eagerly (host
// overhead counts where it exceeds the GPU's time) and replayed from a DeviceGraph (GPU time).
// Floors (H200: ~67 TFLOP/s FP32 without tensor cores, 4.8 TB/s): layer 2's 1.85 GFLOP take at
// least 28 us per op in FP32; layer 1 (K = 9) is memory-bound: 12.8 MB written by the forward,
// >= 2.7 us. max_pool2d forward at 28x28 moves 12.8 MB in, 3.2 MB values and 6.4 MB indices out
// (>= 4.7 us); its backward 3.2 + 6.4 MB in, 12.8 MB out (>= 4.7 us). PyTorch's max-pool
// backward there: 54 us.
// Measured (H200, cuDNN 9.14 at run time, --benchmark_min_time=0.05, one run; us per call,
// eager / graph-replayed, TF32 off):
//   layer 1 forward 36.9 / 24.8 (2.3 TFLOP/s graphed), backward input 48.2 / 45.7, backward
//   weight 49.4 / 40.9; layer 2 forward 46.5 / 42.9 (21.5 TFLOP/s), backward input 83.7 / 74.9
//   (12.4), backward weight 41.2 / 35.6 (26.0). TF32 on, graphed: layer 2 forward 26.5 (34.9
//   TFLOP/s), backward input 25.0 (37.0), backward weight 36.0 (25.7).
//   max_pool2d 28x28 (C 32) forward 10.1 / 9.1, backward 19.5 / 18.3; 14x14 (C 64) forward
//   6.7 / 5.5, backward 11.1 / 10.0.
// Benchmark mode (ops/conv.h: each shape's deterministic algorithms timed on the GPU once),
// TF32 off, graph-replayed, us per call (H200, medians of 5, 2026-11-22; heuristics' pick of the
// same run in brackets): layer 1 forward 24.8 (24.9), backward input 23.1 (46.2), backward
// weight 30.7 (40.9); layer 2 forward 42.9 (43.0), backward input 27.3 (74.6), backward weight
// 35.9 (35.8). The CNN's five convolutions (no input gradient for layer 1) go from 220 to 161 us
// of GPU time per step; eager calls, host-bound at these sizes, change by -10 to +20%.
// So pooling is within ~2-4x of its floor and max-pool backward beats PyTorch's 54 us; the
// convolutions are not: layer 1 is 5-10x its memory floor (cuDNN's heuristic picks, plus a
// separate bias pass), and the eager forward of layer 1 is host-bound (~37 us a call in cuDNN's
// legacy API path) where the graph replays in 25 us.
//
// TF32 on, eager calls slower, replays faster (H200, 2026-11-27, medians of 3, heuristics' pick;
// us per call, eager (host us per call) / graph-replayed (kernels per call), TF32 off -> on):
//   layer 2 forward 46.9 (44.2) / 43.1 (2) -> 50.5 (49.7) / 26.4 (4);
//   layer 2 backward input 84.6 (50.1) / 74.9 (4) -> 57.9 (57.1) / 25.3 (4);
//   layer 2 backward weight 44.9 (44.1) / 36.0 (5) -> 62.6 (62.0) / 36.0 (5);
//   layer 1 backward input 48.8 (36.5) / 45.9 (1) -> 79.2 (77.6) / 45.9 (6);
//   layer 1 backward weight 53.9 (52.9) / 41.3 (5) -> 79.0 (76.6) / 64.1 (5).
// With TF32 allowed, cuDNN's heuristics pick tensor-core engines that compute in NHWC: ncu of the
// layer 2 forward shows two nchwToNhwcKernel launches (input and weight) before a TF32 implicit
// GEMM of 16 us, where TF32 off runs one FFMA implicit GEMM of 37 us in NCHW; the bias add is a
// second kernel either way. Eager calls at these sizes are host-bound (host time per call is
// within 1-3 us of the wall time per call in every eager row but one), so each extra launch adds
// its host cost, about 3-8 us in cuDNN, to the wall time, while the GPU work the tensor cores
// save stays hidden behind the host. The one GPU-bound eager row, layer 2's input gradient with
// TF32 off (84.6 us against 50.1 of host time), is faster eager with TF32 too. A replay has no host cost, so there the tensor cores win (43.1 -> 26.4
// and 74.9 -> 25.3 us), except in layer 1's weight gradient (1 input channel), where the TF32
// engine is slower on the GPU as well. So the anomaly is launch overhead, not slower kernels; it
// goes away in graphed mode, where grove's models run their steps.
// Run: ./build/bench/cuda_conv_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>

#include "bench/cuda_timing.h"
#include "core/tensor.h"
#include "ops/conv.h"
#include "ops/pool.h"
#include "ops/precision.h"

namespace {

using grove::Tensor;

constexpr int kCalls = 20;

bool skip_without_gpu(benchmark::State& state) {
  if (grove::cuda_is_available()) return false;
  state.SkipWithError("no CUDA device");
  return true;
}

enum Op { kForward, kBackwardInput, kBackwardWeight };

// Args: op, in channels, height (= width), out channels, TF32 (0 or 1), graph (0 or 1); batch
// 128, 3x3, pad 1. `measure`: benchmark mode (ops/conv.h), cuDNN's algorithms timed on the
// first call instead of its heuristics' pick.
void run_conv(benchmark::State& state, bool measure) {
  if (skip_without_gpu(state)) return;
  const bool saved_benchmark = grove::ops::conv_benchmark();
  grove::ops::set_conv_benchmark(measure);
  const auto op = static_cast<Op>(state.range(0));
  const std::int64_t batch = 128, channels = state.range(1), size = state.range(2),
                     out_channels = state.range(3);
  const bool saved = grove::ops::allow_tf32();
  grove::ops::set_allow_tf32(state.range(4) != 0);
  const grove::TensorOptions options = grove::TensorOptions().device(grove::cuda(0));
  const Tensor input = grove::full({batch, channels, size, size}, 0.5, options);
  const Tensor weight = grove::full({out_channels, channels, 3, 3}, 0.25, options);
  const Tensor bias = grove::full({out_channels}, 1.0, options);
  const Tensor grad = grove::full({batch, out_channels, size, size}, 0.125, options);
  const grove::DimVector input_sizes{batch, channels, size, size};
  const grove::DimVector weight_sizes{out_channels, channels, 3, 3};
  const double per_call = grove::bench::time_gpu(state, state.range(5) != 0, kCalls, [&] {
    Tensor out;
    switch (op) {
      case kForward:
        out = grove::ops::conv2d(input, weight, bias, {1, 1}, {1, 1});
        break;
      case kBackwardInput:
        out = grove::ops::conv2d_backward_input(grad, weight, input_sizes, {1, 1}, {1, 1});
        break;
      case kBackwardWeight:
        out = grove::ops::conv2d_backward_weight(grad, input, weight_sizes, {1, 1}, {1, 1});
        break;
    }
    benchmark::DoNotOptimize(out.data_ptr());
  });
  grove::ops::set_allow_tf32(saved);
  grove::ops::set_conv_benchmark(saved_benchmark);
  const double flops = 2.0 * static_cast<double>(batch * out_channels * size * size * channels * 9);
  state.counters["TFLOP/s"] = flops / per_call / 1e12;
}
void BM_CudaConv2d(benchmark::State& state) {
  run_conv(state, false);
}
BENCHMARK(BM_CudaConv2d)
    ->ArgNames({"op", "C", "HW", "O", "tf32", "graph"})
    ->ArgsProduct({{kForward, kBackwardInput, kBackwardWeight}, {1}, {28}, {32}, {0, 1}, {0, 1}})
    ->ArgsProduct({{kForward, kBackwardInput, kBackwardWeight}, {32}, {14}, {64}, {0, 1}, {0, 1}})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

void BM_CudaConv2dBenchmarkMode(benchmark::State& state) {
  run_conv(state, true);
}
BENCHMARK(BM_CudaConv2dBenchmarkMode)
    ->ArgNames({"op", "C", "HW", "O", "tf32", "graph"})
    ->ArgsProduct({{kForward, kBackwardInput, kBackwardWeight}, {1}, {28}, {32}, {0}, {0, 1}})
    ->ArgsProduct({{kForward, kBackwardInput, kBackwardWeight}, {32}, {14}, {64}, {0}, {0, 1}})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

// Args: backward (0 or 1), channels, height (= width), graph (0 or 1); batch 128, 2x2 windows,
// stride 2.
void BM_CudaMaxPool2d(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const bool backward = state.range(0) != 0;
  const std::int64_t batch = 128, channels = state.range(1), size = state.range(2);
  const grove::TensorOptions options = grove::TensorOptions().device(grove::cuda(0));
  const Tensor input = grove::ops::conv2d(grove::full({batch, 1, size, size}, 0.5, options),
                                          grove::full({channels, 1, 3, 3}, 0.25, options), {},
                                          {1, 1}, {1, 1});  // some values
  const auto [values, indices] = grove::ops::max_pool2d_with_indices(input, {2, 2});
  const Tensor grad = grove::full(values.sizes(), 1.0, options);
  grove::bench::time_gpu(state, state.range(3) != 0, kCalls, [&] {
    Tensor out = backward ? grove::ops::max_pool2d_backward(grad, indices, input.sizes())
                          : grove::ops::max_pool2d(input, {2, 2});
    benchmark::DoNotOptimize(out.data_ptr());
  });
}
BENCHMARK(BM_CudaMaxPool2d)
    ->ArgNames({"backward", "C", "HW", "graph"})
    ->ArgsProduct({{0, 1}, {32}, {28}, {0, 1}})
    ->ArgsProduct({{0, 1}, {64}, {14}, {0, 1}})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
