// The type a CUDA kernel computes in for each storage type, and the conversions at its loads
// and stores (Note [Reduced-precision compute] in ops/reduced_compute.h): bfloat16 and float16
// are loaded, widened to float32 (exactly), computed on in float32 and rounded once when stored
// (Note [Rounding to a 16-bit float] in core/reduced_float.h); every other type computes in
// itself. Scalars that a kernel takes (alpha, a clamp bound, a binary op's right operand) are
// passed in the compute type, so x * 0.1 multiplies bfloat16 values by 0.1f, not by 0.1 rounded
// to bfloat16, as PyTorch does. Only .cu files include this header.
#pragma once

#include <cstdint>

#include "core/cuda/pack.cuh"
#include "core/reduced_float.h"

namespace grove::ops::cuda {

template <typename T>
struct OpMathOf {
  using type = T;
};
template <>
struct OpMathOf<BFloat16> {
  using type = float;
};
template <>
struct OpMathOf<Float16> {
  using type = float;
};
template <typename T>
using OpMath = typename OpMathOf<T>::type;

// A stored value in the compute type (exact).
template <typename T>
__device__ inline OpMath<T> widen(T value) {
  return static_cast<OpMath<T>>(value);
}

// A computed value stored as T (rounded to nearest even for the 16-bit types).
template <typename T>
__device__ inline T narrow(OpMath<T> value) {
  return T(value);
}

// The CUDA library functions for float and double, named once (the kernels call them on
// OpMath<T> values).

__device__ inline float exp_of(float v) {
  return expf(v);
}
__device__ inline double exp_of(double v) {
  return ::exp(v);
}
__device__ inline float log_of(float v) {
  return logf(v);
}
__device__ inline double log_of(double v) {
  return ::log(v);
}
__device__ inline float sqrt_of(float v) {
  return sqrtf(v);
}
__device__ inline double sqrt_of(double v) {
  return ::sqrt(v);
}
__device__ inline float tanh_of(float v) {
  return tanhf(v);
}
__device__ inline double tanh_of(double v) {
  return ::tanh(v);
}
__device__ inline float erf_of(float v) {
  return erff(v);
}
__device__ inline double erf_of(double v) {
  return ::erf(v);
}
__device__ inline float pow_of(float v, float e) {
  return powf(v, e);
}
__device__ inline double pow_of(double v, double e) {
  return ::pow(v, e);
}

// See core/cuda/pack.cuh.
using cuda_backend::Pack;

// Elements of T in a 16-byte pack (8 bfloat16, 4 float32, 2 float64).
template <typename T>
inline constexpr int kVecOf = 16 / sizeof(T) > 0 ? static_cast<int>(16 / sizeof(T)) : 1;

// True if `pointer` may be read or written in 16-byte packs.
inline bool aligned16(const void* pointer) {
  return reinterpret_cast<std::uintptr_t>(pointer) % 16 == 0;
}

}  // namespace grove::ops::cuda
