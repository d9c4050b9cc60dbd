// matmul on the CPU: the MLP's first layer (128x784 @ 784x256) and a 64x64 @ 64x64 product,
// float32, reported in GFLOP/s (2 M N K flops per product), next to the bare Eigen GEMM on the
// same shapes so that grove's overhead (dispatch, output allocation, thread policy) shows.
//
// Floor: the anchors' libtorch 1.13 + OpenBLAS took 3.4 us for 64x64 on this machine kind
// (anchors/README.md), 154 GFLOP/s. A 64x64x64 product is 0.52 MFLOP. Eigen's kernels use the
// vector width the compiler allows: AVX2 + FMA with the default GROVE_MARCH=x86-64-v3 (32 flops
// per cycle per core, 83 GFLOP/s per core at the nominal 2.6 GHz), SSE2 without FMA with
// GROVE_MARCH empty (16 flops per cycle, 42 GFLOP/s), which cannot reach the anchor; only builds
// with the same flags compare.
// Measured (medians of 5 repetitions, 2-core AMD EPYC), default x86-64-v3 build: 64x64x64
// 5.8-6.6 us, 128x784x256 0.26 ms (196 GFLOP/s) on a quiet machine; while other jobs shared the
// cores (load average 2 to 4), 64x64x64 5.1-10.0 us, bare Eigen on one thread 4.9-7.0 us and on
// two 8.6 us to 17 ms, and 128x784x256 42 ms in one run (the one-large-product rule of
// Note [Threads in CPU GEMM] takes both threads). With GROVE_MARCH empty (SSE2 Eigen kernels,
// two runs, load average about 1): 64x64x64 14.6 / 14.9 us (35 GFLOP/s), bare Eigen 15.0 / 14.8 us;
// 128x784x256 0.69 / 1.20 ms (75 / 43 GFLOP/s, the second run disturbed); linear with bias
// 0.77 / 0.68 ms; a 1x1x1 call 0.34 us.
// In a build with oneDNN, float32 matmul and linear run its dnnl_sgemm
// (Note [float32 GEMM through oneDNN] in ops/cpu/linalg.h), so BM_Matmul and BM_Linear against
// BM_EigenGemm compare the two libraries. 2-core AVX-512 machine, 2 threads, medians of 3, 2026-11-27: 64x64x64
// 2.74 us (Eigen 3.37 us on two threads, 4.53 on one; the anchor's libtorch 3.4 us), 128x784x256
// 105 us (487 GFLOP/s; Eigen 209 us), linear with bias 125 us.
// Run: ./build/bench/matmul_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>
#include <omp.h>

#include <Eigen/Core>

#include "core/tensor.h"
#include "ops/linalg.h"

namespace {

void set_flops(benchmark::State& state, double flops_per_iteration) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops_per_iteration / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

// grove::ops::matmul, output freed inside the loop (as the anchor's figure).
void BM_Matmul(benchmark::State& state) {
  const std::int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  const grove::Tensor a = grove::full({m, k}, 0.5f);
  const grove::Tensor b = grove::full({k, n}, 0.25f);
  for (auto _ : state) {
    grove::Tensor out = grove::ops::matmul(a, b);
    benchmark::DoNotOptimize(out.data_ptr());
  }
  set_flops(state, 2.0 * static_cast<double>(m * n * k));
}
// 1x1x1 shows the fixed cost of an op call: dispatch, output allocation, planning, launch.
BENCHMARK(BM_Matmul)->Args({1, 1, 1})->Args({64, 64, 64})->Args({128, 784, 256})->UseRealTime();

// linear(x, W, b) of the MLP's first layer: the weight read transposed, the bias fused.
void BM_Linear(benchmark::State& state) {
  const std::int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  const grove::Tensor x = grove::full({m, k}, 0.5f);
  const grove::Tensor weight = grove::full({n, k}, 0.25f);
  const grove::Tensor bias = grove::full({n}, 1.0f);
  for (auto _ : state) {
    grove::Tensor out = grove::ops::linear(x, weight, bias);
    benchmark::DoNotOptimize(out.data_ptr());
  }
  set_flops(state, 2.0 * static_cast<double>(m * n * k));
}
BENCHMARK(BM_Linear)->Args({128, 784, 256})->UseRealTime();

// The bare Eigen GEMM into a preallocated result, on `threads` threads (range 3).
void BM_EigenGemm(benchmark::State& state) {
  using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const std::int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  const Matrix a = Matrix::Constant(m, k, 0.5f);
  const Matrix b = Matrix::Constant(k, n, 0.25f);
  Matrix c(m, n);
  const int saved = omp_get_max_threads();
  omp_set_num_threads(static_cast<int>(state.range(3)));
  for (auto _ : state) {
    c.noalias() = a * b;
    benchmark::DoNotOptimize(c.data());
  }
  omp_set_num_threads(saved);
  set_flops(state, 2.0 * static_cast<double>(m * n * k));
}
BENCHMARK(BM_EigenGemm)
    ->Args({64, 64, 64, 1})
    ->Args({64, 64, 64, 2})
    ->Args({128, 784, 256, 1})
    ->Args({128, 784, 256, 2})
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
