// matmul, linear and bmm on a CUDA device (cuBLASLt / cuBLAS, ops/cuda/linalg.cpp), float32, in
// TFLOP/s (2 M N K flops per product) at the reference models' shapes, plus an 8192^3 product
// with TF32 off and on as the measured peak, and the host time of one small linear call.
//
// Timing: each iteration records a CUDA event, launches `kRepeats` calls on the current stream,
// records another and waits for it; the time between the events over kRepeats is the
// iteration's time (UseManualTime). Small products are host-bound (the GPU idles between
// launches while grove dispatches the next call), so their TFLOP/s include dispatch; the
// BM_CudaLinearHostTime figure is that dispatch cost alone, per call, without any sync.
//
// Floor (H200, dense, no sparsity): float32 without TF32 runs on the CUDA cores, about 60-67
// TFLOP/s at most; TF32 on the tensor cores about 495 TFLOP/s datasheet, in practice 300-400
// for a large square product. The MLP's products (128 x 784 x 256 is 51 MFLOP, under 1 us even at
// 67 TFLOP/s) are launch- and host-bound: the per-call host time is what matters for them.
// Measured: see the report of the first GPU run (numbers are written into this header once they
// are stable).
// Run: ./build/bench/cuda_matmul_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>

#include <chrono>

#include "core/device.h"
#include "core/stream.h"
#include "core/tensor.h"
#include "ops/linalg.h"
#include "ops/precision.h"

#ifdef GROVE_HAS_CUDA
#include <cuda_runtime_api.h>

#include "core/cuda/cuda_device.h"
#endif

namespace {

using grove::Tensor;

constexpr int kRepeats = 10;

// Runs `body` kRepeats times per iteration between two CUDA events; reports TFLOP/s.
template <typename Body>
void time_on_gpu(benchmark::State& state, double flops_per_call, Body body) {
#ifdef GROVE_HAS_CUDA
  const grove::Device gpu = grove::cuda(0);
  cudaStream_t stream = grove::cuda_backend::cuda_stream(grove::current_stream(gpu));
  cudaEvent_t start = nullptr, stop = nullptr;
  GROVE_CUDA_CHECK(cudaEventCreate(&start));
  GROVE_CUDA_CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < 3; ++i) body();  // warm-up: handles, workspace, plan cache
  GROVE_CUDA_CHECK(cudaStreamSynchronize(stream));
  for (auto _ : state) {
    GROVE_CUDA_CHECK(cudaEventRecord(start, stream));
    for (int i = 0; i < kRepeats; ++i) body();
    GROVE_CUDA_CHECK(cudaEventRecord(stop, stream));
    GROVE_CUDA_CHECK(cudaEventSynchronize(stop));
    float milliseconds = 0.0f;
    GROVE_CUDA_CHECK(cudaEventElapsedTime(&milliseconds, start, stop));
    state.SetIterationTime(static_cast<double>(milliseconds) / 1e3 / kRepeats);
  }
  GROVE_CUDA_CHECK(cudaEventDestroy(start));
  GROVE_CUDA_CHECK(cudaEventDestroy(stop));
  state.counters["TFLOP/s"] =
      benchmark::Counter(flops_per_call / 1e12, benchmark::Counter::kIsIterationInvariantRate);
#else
  (void)flops_per_call;
  (void)body;
  state.SkipWithError("no CUDA device");
#endif
}

Tensor on_gpu(grove::IntArrayRef sizes, float value) {
  return grove::full(sizes, value, grove::TensorOptions(grove::cuda(0)));
}

bool skip_without_gpu(benchmark::State& state) {
  if (grove::cuda_is_available()) return false;
  state.SkipWithError("no CUDA device");
  return true;
}

// Restores the TF32 switch when a benchmark ends.
struct Tf32Setting {
  bool saved = grove::ops::allow_tf32();
  explicit Tf32Setting(bool allow) { grove::ops::set_allow_tf32(allow); }
  ~Tf32Setting() { grove::ops::set_allow_tf32(saved); }
};

// Args: M, K, N, tf32. a (M, K) @ b (K, N).
void BM_CudaMatmul(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const std::int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  const Tf32Setting tf32(state.range(3) != 0);
  const Tensor a = on_gpu({m, k}, 0.5f);
  const Tensor b = on_gpu({k, n}, 0.25f);
  time_on_gpu(state, 2.0 * static_cast<double>(m * n * k), [&] {
    Tensor out = grove::ops::matmul(a, b);
    benchmark::DoNotOptimize(out.data_ptr());
  });
}
BENCHMARK(BM_CudaMatmul)
    ->ArgNames({"M", "K", "N", "tf32"})
    // MLP backward, input gradients: grad (128, out) @ W (out, in)
    ->Args({128, 256, 784, 0})
    ->Args({128, 256, 256, 0})
    ->Args({128, 10, 256, 0})
    // GPT (B*T = 2048, C = 128): qkv, MLP up, MLP down
    ->Args({2048, 128, 384, 0})
    ->Args({2048, 128, 512, 0})
    ->Args({2048, 512, 128, 0})
    // the measured peak
    ->Args({8192, 8192, 8192, 0})
    ->Args({8192, 8192, 8192, 1})
    ->UseManualTime();

// Args: M, K, N. a stored (K, M), read transposed: the weight gradient grad^T @ x.
void BM_CudaMatmulTransposedA(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const std::int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  const Tf32Setting tf32(false);
  const Tensor a = on_gpu({k, m}, 0.5f);
  const Tensor b = on_gpu({k, n}, 0.25f);
  time_on_gpu(state, 2.0 * static_cast<double>(m * n * k), [&] {
    Tensor out = grove::ops::matmul(a.t(), b);
    benchmark::DoNotOptimize(out.data_ptr());
  });
}
BENCHMARK(BM_CudaMatmulTransposedA)
    ->ArgNames({"M", "K", "N"})
    // MLP weight gradients: grad^T (out, 128) @ x (128, in)
    ->Args({256, 128, 784})
    ->Args({256, 128, 256})
    ->Args({10, 128, 256})
    ->UseManualTime();

// Args: M, K, N. linear(x (M, K), W (N, K), b (N)): the weight read transposed, bias fused.
void BM_CudaLinear(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const std::int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  const Tf32Setting tf32(false);
  const Tensor x = on_gpu({m, k}, 0.5f);
  const Tensor weight = on_gpu({n, k}, 0.25f);
  const Tensor bias = on_gpu({n}, 1.0f);
  time_on_gpu(state, 2.0 * static_cast<double>(m * n * k), [&] {
    Tensor out = grove::ops::linear(x, weight, bias);
    benchmark::DoNotOptimize(out.data_ptr());
  });
}
BENCHMARK(BM_CudaLinear)
    ->ArgNames({"M", "K", "N"})
    // MLP forward, batch 128
    ->Args({128, 784, 256})
    ->Args({128, 256, 256})
    ->Args({128, 256, 10})
    // GPT
    ->Args({2048, 128, 384})
    ->Args({2048, 128, 512})
    ->Args({2048, 512, 128})
    ->UseManualTime();

// Args: batch, M, K, N. GPT attention scores: 128 x (64x32 @ 32x64).
void BM_CudaBmm(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const std::int64_t batch = state.range(0), m = state.range(1), k = state.range(2),
                     n = state.range(3);
  const Tf32Setting tf32(false);
  const Tensor a = on_gpu({batch, m, k}, 0.5f);
  const Tensor b = on_gpu({batch, k, n}, 0.25f);
  time_on_gpu(state, 2.0 * static_cast<double>(batch * m * n * k), [&] {
    Tensor out = grove::ops::bmm(a, b);
    benchmark::DoNotOptimize(out.data_ptr());
  });
}
BENCHMARK(BM_CudaBmm)->ArgNames({"B", "M", "K", "N"})->Args({128, 64, 32, 64})->UseManualTime();

// The host side of one small linear call (dispatch, output allocation, plan lookup, launch):
// wall clock over kCalls calls with no sync in between, per call. The GPU work (about 3 us per
// call) stays behind the host, so this is the host's cost.
void BM_CudaLinearHostTime(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
#ifdef GROVE_HAS_CUDA
  constexpr int kCalls = 64;
  const Tf32Setting tf32(false);
  const Tensor x = on_gpu({128, 256}, 0.5f);
  const Tensor weight = on_gpu({10, 256}, 0.25f);
  const Tensor bias = on_gpu({10}, 1.0f);
  const grove::Stream stream = grove::current_stream(grove::cuda(0));
  for (int i = 0; i < 3; ++i) (void)grove::ops::linear(x, weight, bias);
  grove::synchronize(stream);
  for (auto _ : state) {
    const auto begin = std::chrono::steady_clock::now();
    for (int i = 0; i < kCalls; ++i) {
      Tensor out = grove::ops::linear(x, weight, bias);
      benchmark::DoNotOptimize(out.data_ptr());
    }
    const auto end = std::chrono::steady_clock::now();
    state.SetIterationTime(std::chrono::duration<double>(end - begin).count() / kCalls);
    grove::synchronize(stream);  // outside the timed part: keeps the launch queue short
  }
#endif
}
BENCHMARK(BM_CudaLinearHostTime)->UseManualTime();

}  // namespace

BENCHMARK_MAIN();
