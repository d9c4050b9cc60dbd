// The caching allocator's hot path next to malloc/free, in the same run.
//
// Floor: a cached allocate + free is a few map and set operations under an uncontended mutex,
// with no system call; the goal is at most 100 ns median for 1 MiB on the CPU backend.
// Run: ./build/bench/allocator_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>

#include <cstdlib>

#include "core/caching_allocator.h"
#include "core/storage.h"
#include "core/tensor.h"

namespace {

constexpr std::size_t kMiB = 1 << 20;

void BM_CachingAllocator_AllocFree(benchmark::State& state) {
  grove::CachingAllocator& allocator = grove::allocator_for(grove::kCPU);
  const grove::Stream stream = grove::default_stream(grove::kCPU);
  const auto nbytes = static_cast<std::size_t>(state.range(0));
  { grove::DataPtr warm = allocator.allocate(nbytes, stream); }  // first call makes the segment
  for (auto _ : state) {
    grove::DataPtr data = allocator.allocate(nbytes, stream);
    benchmark::DoNotOptimize(data.get());
  }
}
BENCHMARK(BM_CachingAllocator_AllocFree)->Arg(kMiB)->Arg(4 * kMiB)->Arg(4096);

void BM_Malloc_Free(benchmark::State& state) {
  const auto nbytes = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    void* ptr = std::malloc(nbytes);
    benchmark::DoNotOptimize(ptr);
    std::free(ptr);
  }
}
BENCHMARK(BM_Malloc_Free)->Arg(kMiB)->Arg(4 * kMiB)->Arg(4096);

// A Storage around the cached block: what every tensor allocation pays.
void BM_Storage_AllocFree(benchmark::State& state) {
  for (auto _ : state) {
    grove::StoragePtr storage = grove::Storage::allocate(kMiB, grove::kCPU);
    benchmark::DoNotOptimize(storage.get());
  }
}
BENCHMARK(BM_Storage_AllocFree);

// A whole tensor: storage, TensorImpl, sizes and strides (no fill).
void BM_EmptyTensor(benchmark::State& state) {
  for (auto _ : state) {
    grove::Tensor tensor = grove::empty({256, 1024});
    benchmark::DoNotOptimize(tensor.impl());
  }
}
BENCHMARK(BM_EmptyTensor);

}  // namespace

BENCHMARK_MAIN();
