// Raw CUDA launches for the GPU benchmarks: the floor that grove's dispatch is compared with.
// Plain C++ header; defined in cuda_bench_kernels.cu.
#pragma once

#include <cuda_runtime_api.h>

namespace grove::bench {

// Launches a kernel of one block of 32 threads that adds 1 to data[0]: the same tiny kernel as
// ../shared/anchors/cuda_launch_floor.cu, launched with <<<>>> and no checks.
void launch_tiny_kernel(float* data, cudaStream_t stream);

// The same kernel with 64 more bytes of arguments (a struct of two doubles, two floats, an enum
// and a bool, like the unary elementwise kernels' arguments): whether argument size moves the
// launch cost.
void launch_tiny_kernel_wide_arguments(float* data, cudaStream_t stream);

}  // namespace grove::bench
