// See cuda_bench_kernels.h.
#include "bench/cuda_bench_kernels.h"

namespace grove::bench {
namespace {

__global__ void tiny_kernel(float* data) {
  if (threadIdx.x == 0) data[blockIdx.x] += 1.0f;
}

struct WideArguments {
  int kind;
  double low;
  double high;
  float low_t;
  float high_t;
  bool flag;
};

__global__ void tiny_kernel_wide(float* data, const float* unused, const WideArguments args,
                                 long long n, bool vectorise) {
  if (threadIdx.x == 0 && args.kind == 0 && !vectorise && n > 0 && unused == nullptr) {
    data[blockIdx.x] += 1.0f;
  }
}

}  // namespace

void launch_tiny_kernel_wide_arguments(float* data, cudaStream_t stream) {
  tiny_kernel_wide<<<1, 32, 0, stream>>>(data, nullptr, WideArguments{0, 0.0, 1.0, 0.f, 1.f, false},
                                         1, false);
}

void launch_tiny_kernel(float* data, cudaStream_t stream) {
  tiny_kernel<<<1, 32, 0, stream>>>(data);
}

}  // namespace grove::bench
