// The raw CUDA copy and fill kernels, launched by core/cuda/cuda_copy.cpp. The geometry comes
// in a StridedLoop (core/strided_loop.h), passed to the kernel by value as a __grid_constant__
// parameter: sizes and per-operand strides of up to kMaxKernelDims merged dimensions.
//
// What they are not: a general elementwise engine (that is ops/cuda's job); they only move and
// convert elements. Each launch is checked with GROVE_CUDA_CHECK(cudaGetLastError()).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"
#include "core/strided_loop.h"

namespace grove::cuda_backend {

// dst[i] = convert(src[i]) over loop's index space; strides[0] are dst's, strides[1] src's (in
// elements). Conversion to bool is "!= 0", otherwise static_cast, as on the CPU.
void copy_kernel(void* dst, DType dst_dtype, const void* src, DType src_dtype,
                 const StridedLoop<2>& loop, cudaStream_t stream);
// dst[i] = value, where value_bits holds the value already converted to dtype's C++ type (in
// its first element_size(dtype) bytes).
void fill_kernel(void* dst, DType dtype, std::uint64_t value_bits, const StridedLoop<1>& loop,
                 cudaStream_t stream);

}  // namespace grove::cuda_backend
