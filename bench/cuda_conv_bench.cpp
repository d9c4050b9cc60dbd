// conv2d (cuDNN) and pooling on a CUDA device at the reference CNN's shapes, batch 128, float32:
//   layer 1: (128, 1, 28, 28) * (32, 1, 3, 3), padding 1, then max_pool2d 2 on (128, 32, 28, 28)
//   layer 2: (128, 32, 14, 14) * (64, 32, 3, 3), padding 1, then max_pool2d 2 on (128, 64, 14, 14)
// Convolutions report TFLOP/s of 2 N O Ho Wo C kH kW flops (each of forward, backward input and
// backward weight does that many), with TF32 off (the default) and on; pooling reports time.
// GPU time per call from CUDA events around kCalls back-to-back calls (UseManualTime), so host
// overhead only counts where it exceeds the GPU's time.
// Floors (H200: ~67 TFLOP/s FP32 without tensor cores, 4.8 TB/s): layer 2's 1.85 GFLOP take at
// least 28 us per op in FP32; layer 1 (K = 9) is memory-bound: 12.8 MB written by the forward,
// >= 2.7 us. max_pool2d forward at 28x28 moves 12.8 MB in, 3.2 MB values and 6.4 MB indices out
// (>= 4.7 us); its backward 3.2 + 6.4 MB in, 12.8 MB out (>= 4.7 us). PyTorch's max-pool
// backward there: 54 us.
// Run: ./build/bench/cuda_conv_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include "core/cuda/cuda_device.h"
#include "core/stream.h"
#include "core/tensor.h"
#include "ops/conv.h"
#include "ops/pool.h"
#include "ops/precision.h"

namespace {

using grove::Tensor;

constexpr int kCalls = 20;

// Times kCalls calls of `call` on the current stream with CUDA events; seconds per call.
template <typename Call>
void time_gpu(benchmark::State& state, Call call) {
  const grove::Device device = grove::cuda(0);
  cudaStream_t stream = grove::cuda_backend::cuda_stream(grove::current_stream(device));
  for (int i = 0; i < 3; ++i) call();  // plans, workspaces and the allocator's cache
  grove::synchronize(grove::current_stream(device));
  cudaEvent_t start = nullptr, stop = nullptr;
  GROVE_CUDA_CHECK(cudaEventCreate(&start));
  GROVE_CUDA_CHECK(cudaEventCreate(&stop));
  for (auto _ : state) {
    GROVE_CUDA_CHECK(cudaEventRecord(start, stream));
    for (int i = 0; i < kCalls; ++i) call();
    GROVE_CUDA_CHECK(cudaEventRecord(stop, stream));
    GROVE_CUDA_CHECK(cudaEventSynchronize(stop));
    float milliseconds = 0.0f;
    GROVE_CUDA_CHECK(cudaEventElapsedTime(&milliseconds, start, stop));
    state.SetIterationTime(milliseconds / 1e3 / kCalls);
  }
  GROVE_CUDA_CHECK(cudaEventDestroy(start));
  GROVE_CUDA_CHECK(cudaEventDestroy(stop));
}

bool skip_without_gpu(benchmark::State& state) {
  if (grove::cuda_is_available()) return false;
  state.SkipWithError("no CUDA device");
  return true;
}

enum Op { kForward, kBackwardInput, kBackwardWeight };

// Args: op, in channels, height (= width), out channels, TF32 (0 or 1); batch 128, 3x3, pad 1.
void BM_CudaConv2d(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
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
  time_gpu(state, [&] {
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
  const double flops =
      2.0 * static_cast<double>(batch * out_channels * size * size * channels * 9);
  state.counters["TFLOP/s"] =
      benchmark::Counter(flops / 1e12, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_CudaConv2d)
    ->ArgNames({"op", "C", "HW", "O", "tf32"})
    ->ArgsProduct({{kForward, kBackwardInput, kBackwardWeight}, {1}, {28}, {32}, {0, 1}})
    ->ArgsProduct({{kForward, kBackwardInput, kBackwardWeight}, {32}, {14}, {64}, {0, 1}})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

// Args: backward (0 or 1), channels, height (= width); batch 128, 2x2 windows, stride 2.
void BM_CudaMaxPool2d(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const bool backward = state.range(0) != 0;
  const std::int64_t batch = 128, channels = state.range(1), size = state.range(2);
  const grove::TensorOptions options = grove::TensorOptions().device(grove::cuda(0));
  const Tensor input = grove::ops::conv2d(
      grove::full({batch, 1, size, size}, 0.5, options),
      grove::full({channels, 1, 3, 3}, 0.25, options), {}, {1, 1}, {1, 1});  // some values
  const auto [values, indices] = grove::ops::max_pool2d_with_indices(input, {2, 2});
  const Tensor grad = grove::full(values.sizes(), 1.0, options);
  time_gpu(state, [&] {
    Tensor out = backward ? grove::ops::max_pool2d_backward(grad, indices, input.sizes())
                          : grove::ops::max_pool2d(input, {2, 2});
    benchmark::DoNotOptimize(out.data_ptr());
  });
}
BENCHMARK(BM_CudaMaxPool2d)
    ->ArgNames({"backward", "C", "HW"})
    ->ArgsProduct({{0, 1}, {32}, {28}})
    ->ArgsProduct({{0, 1}, {64}, {14}})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
