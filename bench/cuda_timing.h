// GPU timing for the CUDA benchmarks (bench/cuda_*_bench.cpp): CUDA events around a batch of
// calls on a stream of its own, eager or replayed from one DeviceGraph.
#pragma once

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <chrono>

#include "core/cuda/cuda_device.h"
#include "core/device_graph.h"
#include "core/stream.h"

namespace grove::bench {

// Times `calls` calls of `call` per iteration with CUDA events, after three warm-up calls
// (plans, workspaces and the allocator's cache). Eager (graphed false): the calls are launched
// one by one, so host overhead shows where it exceeds the GPU's time. Graphed: they are captured
// once into a DeviceGraph and replayed, so the events see GPU time only. An iteration is the
// whole batch, so Google Benchmark's run length follows the wall clock; the counter us_per_call
// is the figure to read. Also counted: host_us_per_call (eager: the host's time to launch a call,
// no wait included; where it exceeds us_per_call's GPU time, the calls are host-bound) and
// kernels_per_call (graphed: the graph's nodes over the calls captured; kernels, and any memset
// or copy node). Returns the seconds per call.
template <typename Call>
double time_gpu(benchmark::State& state, bool graphed, int calls, Call call) {
  const Device device = cuda(0);
  const Stream stream = new_stream(device);
  const StreamGuard guard(stream);
  cudaStream_t cuda_stream = cuda_backend::cuda_stream(stream);
  for (int i = 0; i < 3; ++i) call();
  synchronize(stream);
  DeviceGraph graph(device);
  if (graphed) {
    graph.begin_capture(stream);
    for (int i = 0; i < calls; ++i) call();
    graph.end_capture();
  }
  cudaEvent_t start = nullptr, stop = nullptr;
  GROVE_CUDA_CHECK(cudaEventCreate(&start));
  GROVE_CUDA_CHECK(cudaEventCreate(&stop));
  double seconds = 0.0;
  double host_seconds = 0.0;
  for (auto _ : state) {
    GROVE_CUDA_CHECK(cudaEventRecord(start, cuda_stream));
    if (graphed) {
      graph.replay();
    } else {
      const auto host_start = std::chrono::steady_clock::now();
      for (int i = 0; i < calls; ++i) call();
      host_seconds +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - host_start).count();
    }
    GROVE_CUDA_CHECK(cudaEventRecord(stop, cuda_stream));
    GROVE_CUDA_CHECK(cudaEventSynchronize(stop));
    float milliseconds = 0.0f;
    GROVE_CUDA_CHECK(cudaEventElapsedTime(&milliseconds, start, stop));
    state.SetIterationTime(milliseconds / 1e3);
    seconds += milliseconds / 1e3;
  }
  GROVE_CUDA_CHECK(cudaEventDestroy(start));
  GROVE_CUDA_CHECK(cudaEventDestroy(stop));
  const double total_calls = static_cast<double>(state.iterations()) * calls;
  const double per_call = seconds / total_calls;
  state.counters["us_per_call"] = per_call * 1e6;
  if (graphed) {
    state.counters["kernels_per_call"] = static_cast<double>(graph.num_nodes()) / calls;
  } else {
    state.counters["host_us_per_call"] = host_seconds / total_calls * 1e6;
  }
  return per_call;
}

}  // namespace grove::bench
