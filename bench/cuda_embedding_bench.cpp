// embedding and embedding_backward on a CUDA device (ops/cuda/embedding.cu), float32: the
// reference GPT's token table (128 rows, batch 32 x 64 = 2048 indices, width 128), its position
// table (64 rows), and a large vocabulary (50,000 rows, 8192 indices); embedding_backward takes
// its sort path (more than 512 indices), and for comparison its scan path, forced.
// Time per call from CUDA events around kCalls calls replayed from one DeviceGraph, so the
// figure is GPU time (us_per_call); eager calls add the host's launch costs on top.
// Indices are random (a quarter of them one hot row), the gradient random.
// Measured (H200, medians of 3, 2026-11-22), us per call of GPU time:
//   embedding (gather): 2.9 (128 or 64 rows, 2048 indices), 6.7 (50,000 rows, 8192 indices).
//   embedding_backward, sort / forced scan: 128 rows 47.1 / 125.2; 64 rows 51.5 / 131.7;
//   50,000 rows 217 / 2886. The sort path is now the default above 512 indices; the floor for
//   the GPT's 2048 x 128 floats is a few us, so the sort's six launches (and sum_segments' chain
//   of dependent reads per row) still leave much to gain.
// Run: ./build/bench/cuda_embedding_bench --benchmark_repetitions=5
// --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

#include "bench/cuda_timing.h"
#include "core/tensor.h"
#include "ops/cuda/embedding.h"
#include "ops/embedding.h"
#include "ops/random.h"

namespace {

using grove::Tensor;

constexpr int kCalls = 20;

// Args: rows, indices, features, what: 0 embedding, 1 embedding_backward, 2 embedding_backward
// forced onto its scan path (set_embedding_scan_limit), to compare the two paths.
void BM_CudaEmbedding(benchmark::State& state) {
  if (!grove::cuda_is_available()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  const std::int64_t rows = state.range(0), count = state.range(1), features = state.range(2);
  const bool backward = state.range(3) != 0;
  // The default limit, restored at the end; "always scan" for what == 2.
  const std::int64_t default_limit = grove::ops::cuda::set_embedding_scan_limit(INT64_MAX);
  if (state.range(3) != 2) grove::ops::cuda::set_embedding_scan_limit(default_limit);
  const grove::Device gpu = grove::cuda(0);
  std::mt19937 engine(1);
  std::uniform_int_distribution<std::int64_t> pick(0, rows - 1);
  std::vector<std::int64_t> values(static_cast<std::size_t>(count));
  for (std::int64_t& value : values) value = pick(engine) % 4 == 0 ? 7 : pick(engine);
  const Tensor indices = grove::from_vector(values).to(gpu);
  const Tensor weight = grove::ops::randn({rows, features}).to(gpu);
  const Tensor grad = grove::ops::randn({count, features}).to(gpu);
  auto call = [&] {
    return backward ? grove::ops::embedding_backward(grad, indices, rows)
                    : grove::ops::embedding(weight, indices);
  };
  grove::bench::time_gpu(state, /*graphed=*/true, kCalls, [&] { (void)call(); });
  grove::ops::cuda::set_embedding_scan_limit(default_limit);
}
BENCHMARK(BM_CudaEmbedding)
    ->ArgNames({"rows", "N", "C", "backward"})
    ->ArgsProduct({{128}, {2048}, {128}, {0, 1, 2}})
    ->ArgsProduct({{64}, {2048}, {128}, {0, 1, 2}})
    ->ArgsProduct({{50000}, {8192}, {128}, {0, 1, 2}})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
