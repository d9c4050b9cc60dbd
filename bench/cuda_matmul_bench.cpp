// matmul, linear and bmm on a CUDA device (cuBLASLt / cuBLAS, ops/cuda/linalg.cpp), float32, in
// TFLOP/s (2 M N K flops per product) at the reference models' shapes, plus an 8192^3 product
// with TF32 off and on as the measured peak, and the host time of one small linear call.
//
// Timing: each iteration records a CUDA event, launches `kRepeats` calls on a stream of its own,
// records another and waits for it; the time between the events is the iteration's time
// (UseManualTime), so Google Benchmark's run length follows the wall clock, and the counters
// us_per_call and TFLOP/s are per call. Small products are host-bound (the GPU idles between
// launches while grove dispatches the next call), so their TFLOP/s include dispatch; the
// BM_CudaLinearHostTime figure is that dispatch cost alone, per call, without any sync.
//
// Floor (H200, dense, no sparsity): float32 without TF32 runs on the CUDA cores, about 60-67
// TFLOP/s at most; TF32 on the tensor cores about 495 TFLOP/s datasheet, in practice 300-400
// for a large square product. The MLP's products (128 x 784 x 256 is 51 MFLOP, under 1 us even at
// 67 TFLOP/s) are launch- and host-bound: the per-call host time is what matters for them.
// Measured (H200, one run each of two, min_time 0.1 s; the two runs agreed within 5%):
//   8192^3 float32: 51.3 TFLOP/s with TF32 off (21.4 ms), 442-444 TFLOP/s with TF32 on (2.5 ms).
//   MLP shapes, all ~8-12 us per call, i.e. host-bound: linear 128x784x256 11.9 us (4.3 TFLOP/s),
//   128x256x256 11.4 us, 128x256x10 10.0 us; input gradients 10.0 / 12.0 / 9.4 us; weight
//   gradients (a read transposed) 8.3 / 8.7 / 10.1 us.
//   GPT: linear 2048x128x384 12.5 us (16 TFLOP/s), 2048x128x512 12.5 us (21.5), 2048x512x128
//   15.6 us (17.2); bmm 128 x (64x32 @ 32x64) 7.9 us (4.2 TFLOP/s).
//   Host time per call (medians of 5): linear 9.4 us, matmul 9.4 us; in one run, the bare
//   cublasLtMatmul of the same product 8.3 us and an elementwise add (dispatch + allocation +
//   one launch) 3.6 us. So grove adds about 1 us to a linear call and cuBLASLt's own host path
//   is the bulk: an eager MLP step of ~9 GEMMs spends ~85 us in them. A second machine
//   (2026-11-22): linear 10.2 us, matmul 10.6, bare cublasLtMatmul 9.4, and the legacy
//   cublasSgemm of the same product (no bias) 10.4 us, so the legacy API is no cheaper to call.
// Run: ./build/bench/cuda_matmul_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>

#include <chrono>

#include "bench/cuda_timing.h"
#include "core/device.h"
#include "core/stream.h"
#include "core/tensor.h"
#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "ops/precision.h"

#ifdef GROVE_HAS_CUDA
#include <cuda_runtime_api.h>

#include "core/cuda/cuda_device.h"
#include "ops/cuda/blas_handle.h"
#endif

namespace {

using grove::Tensor;

constexpr int kRepeats = 10;

// Runs `body` kRepeats times per iteration between two CUDA events (bench/cuda_timing.h, eager);
// reports TFLOP/s next to us_per_call.
template <typename Body>
void time_on_gpu(benchmark::State& state, double flops_per_call, Body body) {
  const double per_call = grove::bench::time_gpu(state, /*graphed=*/false, kRepeats, body);
  state.counters["TFLOP/s"] = flops_per_call / per_call / 1e12;
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

// --- host time per call ---
// Wall clock over kCalls calls with no sync in between, per call; the stream is synchronised
// between iterations, outside the timed part, so the launch queue never fills and blocks the
// host. The GPU work of these small calls (a few us each) stays behind the host, so what is
// measured is the host's cost: dispatch, output allocation, plan lookup and the launch.
template <typename Body>
void time_on_host(benchmark::State& state, Body body) {
  constexpr int kCalls = 64;
  const grove::Stream stream = grove::current_stream(grove::cuda(0));
  for (int i = 0; i < 3; ++i) body();
  grove::synchronize(stream);
  double seconds = 0.0;
  for (auto _ : state) {
    const auto begin = std::chrono::steady_clock::now();
    for (int i = 0; i < kCalls; ++i) body();
    const auto end = std::chrono::steady_clock::now();
    state.SetIterationTime(std::chrono::duration<double>(end - begin).count());
    seconds += std::chrono::duration<double>(end - begin).count();
    grove::synchronize(stream);
  }
  state.counters["us_per_call"] =
      seconds * 1e6 / (static_cast<double>(state.iterations()) * kCalls);
}

// linear(x (128, 256), W (10, 256), b (10)): the MLP's last layer (cuBLASLt, bias epilogue).
void BM_CudaLinearHostTime(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const Tf32Setting tf32(false);
  const Tensor x = on_gpu({128, 256}, 0.5f);
  const Tensor weight = on_gpu({10, 256}, 0.25f);
  const Tensor bias = on_gpu({10}, 1.0f);
  time_on_host(state, [&] {
    Tensor out = grove::ops::linear(x, weight, bias);
    benchmark::DoNotOptimize(out.data_ptr());
  });
}
BENCHMARK(BM_CudaLinearHostTime)->UseManualTime();

// The same product without the bias, through matmul with the weight transposed in place.
void BM_CudaMatmulHostTime(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const Tf32Setting tf32(false);
  const Tensor x = on_gpu({128, 256}, 0.5f);
  const Tensor weight = on_gpu({10, 256}, 0.25f);
  time_on_host(state, [&] {
    Tensor out = grove::ops::matmul(x, weight.t());
    benchmark::DoNotOptimize(out.data_ptr());
  });
}
BENCHMARK(BM_CudaMatmulHostTime)->UseManualTime();

// Baseline: an elementwise add of (128, 10) tensors: dispatch, output allocation and one
// kernel launch, no library call.
void BM_CudaAddHostTime(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const Tensor a = on_gpu({128, 10}, 0.5f);
  const Tensor b = on_gpu({128, 10}, 0.25f);
  time_on_host(state, [&] {
    Tensor out = grove::ops::add(a, b);
    benchmark::DoNotOptimize(out.data_ptr());
  });
}
BENCHMARK(BM_CudaAddHostTime)->UseManualTime();

#ifdef GROVE_HAS_CUDA
template <typename T>
void set_attribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t name, const T& value) {
  GROVE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, name, &value, sizeof(value)));
}
#endif

// The bare library: cublasLtMatmul of BM_CudaLinearHostTime's product with its bias epilogue,
// descriptors and algorithm made once, into a preallocated output. The difference to
// BM_CudaLinearHostTime is grove's share of a linear call.
void BM_CublasLtHostTime(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
#ifdef GROVE_HAS_CUDA
  const grove::Device gpu = grove::cuda(0);
  const Tensor x = on_gpu({128, 256}, 0.5f);
  const Tensor weight = on_gpu({10, 256}, 0.25f);
  const Tensor bias = on_gpu({10}, 1.0f);
  const Tensor out = on_gpu({128, 10}, 0.0f);
  const grove::Stream stream = grove::current_stream(gpu);
  cudaStream_t cuda_stream = grove::cuda_backend::cuda_stream(stream);
  cublasLtHandle_t handle = grove::ops::cuda::blas_lt_handle(gpu);
  const grove::ops::cuda::BlasWorkspace workspace = grove::ops::cuda::blas_workspace(stream);
  // Column-major: out^T (10 x 128) = W (stored 256 x 10, read transposed) @ x^T (256 x 128).
  cublasLtMatmulDesc_t operation = nullptr;
  GROVE_CUBLAS_CHECK(cublasLtMatmulDescCreate(&operation, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  set_attribute(operation, CUBLASLT_MATMUL_DESC_TRANSA, static_cast<std::int32_t>(CUBLAS_OP_T));
  set_attribute(operation, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS);
  set_attribute(operation, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias.data_ptr());
  cublasLtMatrixLayout_t layout_a = nullptr, layout_b = nullptr, layout_c = nullptr;
  GROVE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout_a, CUDA_R_32F, 256, 10, 256));
  GROVE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout_b, CUDA_R_32F, 256, 128, 256));
  GROVE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout_c, CUDA_R_32F, 10, 128, 10));
  cublasLtMatmulPreference_t preference = nullptr;
  GROVE_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&preference));
  const auto max_workspace = static_cast<std::uint64_t>(workspace.bytes);
  GROVE_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_workspace, sizeof(max_workspace)));
  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  GROVE_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(handle, operation, layout_a, layout_b, layout_c,
                                                    layout_c, preference, 1, &result, &returned));
  if (returned == 0) {
    state.SkipWithError("cuBLASLt has no algorithm");
  } else {
    const float alpha = 1.0f, beta = 0.0f;
    time_on_host(state, [&] {
      GROVE_CUBLAS_CHECK(cublasLtMatmul(handle, operation, &alpha, weight.data_ptr(), layout_a,
                                        x.data_ptr(), layout_b, &beta, out.data_ptr(), layout_c,
                                        out.data_ptr(), layout_c, &result.algo, workspace.data,
                                        workspace.bytes, cuda_stream));
    });
  }
  (void)cublasLtMatmulPreferenceDestroy(preference);
  (void)cublasLtMatrixLayoutDestroy(layout_c);
  (void)cublasLtMatrixLayoutDestroy(layout_b);
  (void)cublasLtMatrixLayoutDestroy(layout_a);
  (void)cublasLtMatmulDescDestroy(operation);
#endif
}
BENCHMARK(BM_CublasLtHostTime)->UseManualTime();

// The same product (no bias) through the legacy API, cublasSgemm, for comparison with cuBLASLt's
// host path.
void BM_CublasSgemmHostTime(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
#ifdef GROVE_HAS_CUDA
  const Tensor x = on_gpu({128, 256}, 0.5f);
  const Tensor weight = on_gpu({10, 256}, 0.25f);
  const Tensor out = on_gpu({128, 10}, 0.0f);
  cublasHandle_t handle = grove::ops::cuda::blas_handle(grove::current_stream(grove::cuda(0)));
  const float alpha = 1.0f, beta = 0.0f;
  // Column-major: out^T (10 x 128) = W^T (10 x 256) @ x^T (256 x 128).
  time_on_host(state, [&] {
    GROVE_CUBLAS_CHECK(cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, 10, 128, 256, &alpha,
                                   static_cast<const float*>(weight.data_ptr()), 256,
                                   static_cast<const float*>(x.data_ptr()), 256, &beta,
                                   static_cast<float*>(out.data_ptr()), 10));
  });
#endif
}
BENCHMARK(BM_CublasSgemmHostTime)->UseManualTime();

}  // namespace

BENCHMARK_MAIN();
