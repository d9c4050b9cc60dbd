// conv2d forward on the CPU for the reference CNN's two layers at batch 128, float32, in GFLOP/s
// (2 N O Ho Wo C kH kW flops, the GEMM's; im2col and the bias are extra work not counted):
//   layer 1: (128, 1, 28, 28) * (32, 1, 3, 3), padding 1 ->  57.8 MFLOP, K = 9 (im2col-bound)
//   layer 2: (128, 32, 14, 14) * (64, 32, 3, 3), padding 1 -> 924.8 MFLOP, K = 288 (GEMM-bound)
// Floor: layer 2 is GEMM work, so it should run near matmul_bench's large-product GFLOP/s;
// layer 1's GEMMs are 32 x 9 x 784, too thin for GEMM peak, and its cost is moving 1.2 MB of
// columns and 12.8 MB of output per batch.
// Measured (medians of 5 repetitions, 2-core AMD EPYC): with the default GROVE_MARCH=x86-64-v3,
// layer 1 0.50 ms and layer 2 6.1 ms (116 and 151 GFLOP/s); with GROVE_MARCH empty (SSE2 Eigen
// kernels, two runs, load average about 1), layer 1 1.11 / 1.90 ms (52 / 30 GFLOP/s), layer 2
// 14.4 / 14.0 ms (64 / 66 GFLOP/s). Those are the im2col + Eigen kernels, which now serve only
// float64 and what oneDNN does not take: in a build with oneDNN
// (Note [Convolutions through oneDNN] in ops/cpu/conv_dnnl.h) this float32 benchmark runs its
// JIT convolutions: layer 1 0.56 -> 0.32 ms and layer 2 5.07 -> 1.94 ms (180 and 478 GFLOP/s;
// 2-core AVX-512 machine, one run each, minutes apart, 2026-11-27).
// Run: ./build/bench/conv_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>

#include "core/tensor.h"
#include "ops/conv.h"

namespace {

// Args: batch, in channels, height (= width), out channels.
void BM_Conv2d3x3Pad1(benchmark::State& state) {
  const std::int64_t batch = state.range(0), channels = state.range(1), size = state.range(2),
                     out_channels = state.range(3);
  const grove::Tensor input = grove::full({batch, channels, size, size}, 0.5f);
  const grove::Tensor weight = grove::full({out_channels, channels, 3, 3}, 0.25f);
  const grove::Tensor bias = grove::full({out_channels}, 1.0f);
  for (auto _ : state) {
    grove::Tensor out = grove::ops::conv2d(input, weight, bias, {1, 1}, {1, 1});
    benchmark::DoNotOptimize(out.data_ptr());
  }
  const double flops = 2.0 * static_cast<double>(batch * out_channels * size * size * channels * 9);
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Conv2d3x3Pad1)
    ->ArgNames({"N", "C", "HW", "O"})
    ->Args({128, 1, 28, 32})
    ->Args({128, 32, 14, 64})
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
