// GROVE_HOST_DEVICE marks a function that both the C++ compiler and nvcc compile, for the CPU and
// the GPU (`__host__ __device__` under nvcc, nothing under g++): the home of the formulas that
// the CPU kernels and the CUDA kernels share (ops/wrapping.h, ops/pool_geometry.h,
// ops/optim_math.h), so that both devices compute the same expression.
#pragma once

#ifdef __CUDACC__
#define GROVE_HOST_DEVICE __host__ __device__
#else
#define GROVE_HOST_DEVICE
#endif
