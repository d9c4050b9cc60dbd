// softmax, log_softmax and cross_entropy on the CPU at the tiny GPT's logits shape: N = 32 * 64
// = 2048 rows (batch 32, context 64) of C = 128 classes, float32. What is timed is the whole
// op call (checks, output allocation from the caching allocator, the kernel), in wall-clock time
// because the kernels may split rows over threads (OMP_NUM_THREADS=1 measures one core).
//
// Counters: "bandwidth" is the bytes the kernel must read and write over the time per call:
//   softmax, log_softmax: N * C * 4 read + N * C * 4 written            = 2 MiB per call;
//   cross_entropy:        N * C * 4 + N * 8 read + N * 4 (lse) + 4 written = about 1.03 MiB.
// Floor: the 2 MiB fits in L2/L3, so the bound is the exp per element rather than DRAM. The
// vectorised float exp (ops/cpu/softmax.cpp) is about 12 SSE instructions per element, about
// 1 ns; with the max, sum and scale sweeps over a row already in L1, one core should need
// about 2048 * 128 * 1.3 ns ~ 0.35 ms per softmax (6 GB/s); two cores about half.
// Measured (2-core AMD EPYC VM, quiet, median of 9): softmax 415 us on one thread (5.1 GB/s),
// 214 us on two (9.8 GB/s); log_softmax 493 / 269 us; cross_entropy 403 / 221 us. On a machine
// already busy with other processes, two OpenMP threads can be several times slower than one
// (a thread that is not scheduled holds up the others at the end of the parallel loop).
// Run: ./build/bench/softmax_bench --benchmark_repetitions=9 --benchmark_report_aggregates_only
//      (prefix OMP_NUM_THREADS=1 for one core)
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "ops/softmax.h"

namespace {

constexpr std::int64_t kRows = 32 * 64;
constexpr std::int64_t kClasses = 128;

grove::Tensor random_logits() {
  std::mt19937 engine(1);
  std::normal_distribution<float> distribution(0.0f, 2.0f);
  std::vector<float> values(static_cast<std::size_t>(kRows * kClasses));
  for (float& value : values) value = distribution(engine);
  return grove::from_vector(values, {kRows, kClasses});
}

grove::Tensor random_targets() {
  std::mt19937 engine(2);
  std::uniform_int_distribution<std::int64_t> distribution(0, kClasses - 1);
  std::vector<std::int64_t> values(static_cast<std::size_t>(kRows));
  for (std::int64_t& value : values) value = distribution(engine);
  return grove::from_vector(values);
}

// "bandwidth" is printed in bytes per second with decimal prefixes: 5.5G/s reads 5.5 GB/s.
void report(benchmark::State& state, double bytes_per_call) {
  state.counters["bandwidth"] =
      benchmark::Counter(bytes_per_call * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate, benchmark::Counter::OneK::kIs1000);
}

void BM_Softmax(benchmark::State& state) {
  const grove::Tensor logits = random_logits();
  for (auto _ : state) {
    grove::Tensor probs = grove::ops::softmax(logits, -1);
    benchmark::DoNotOptimize(probs.data_ptr());
  }
  report(state, 2.0 * kRows * kClasses * sizeof(float));
}
BENCHMARK(BM_Softmax)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_LogSoftmax(benchmark::State& state) {
  const grove::Tensor logits = random_logits();
  for (auto _ : state) {
    grove::Tensor log_probs = grove::ops::log_softmax(logits, -1);
    benchmark::DoNotOptimize(log_probs.data_ptr());
  }
  report(state, 2.0 * kRows * kClasses * sizeof(float));
}
BENCHMARK(BM_LogSoftmax)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_CrossEntropy(benchmark::State& state) {
  const grove::Tensor logits = random_logits();
  const grove::Tensor targets = random_targets();
  for (auto _ : state) {
    grove::Tensor loss = grove::ops::cross_entropy(logits, targets);
    benchmark::DoNotOptimize(loss.data_ptr());
  }
  report(state,
         static_cast<double>(kRows * kClasses * sizeof(float) + kRows * sizeof(std::int64_t) +
                             kRows * sizeof(float) + sizeof(float)));
}
BENCHMARK(BM_CrossEntropy)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
