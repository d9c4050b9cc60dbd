// See ops/cuda/stream_hold.h.
#include "ops/cuda/stream_hold.h"

#include "core/cuda/cuda_check.h"

namespace grove::ops::cuda {
namespace {

// The GPU's nanosecond clock (the same on every SM).
__device__ inline std::uint64_t global_nanoseconds() {
  std::uint64_t now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

__global__ void spin(std::uint64_t nanoseconds) {
  const std::uint64_t start = global_nanoseconds();
  while (global_nanoseconds() - start < nanoseconds) __nanosleep(1000);
}

}  // namespace

void hold_stream(cudaStream_t stream, std::int64_t microseconds) {
  spin<<<1, 1, 0, stream>>>(static_cast<std::uint64_t>(microseconds) * 1000u);
  GROVE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace grove::ops::cuda
