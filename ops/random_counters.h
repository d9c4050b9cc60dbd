// How many Philox counters the uniform and normal fills use, shared by the CPU kernels
// (ops/cpu/random.cpp, ops/cpu/inplace.cpp) and the CUDA kernels (ops/cuda/random.cu), which
// must reserve the same counters (detail::reserve_philox in ops/random.h) to draw the same
// numbers. One Philox call gives four 32-bit words:
//   float32 uniform and normal: 4 elements per counter (uniform: one word each; normal: a
//                               Box-Muller pair of words per two elements);
//   float64 uniform and normal: 2 elements per counter (two words each; normal: a pair of
//                               two-word uniforms per two elements).
// ops/cpu/random.h lists which words each element uses. Host code only; nothing here depends on
// the device.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace grove::ops {

// Counters for `numel` elements of a float32 or float64 uniform fill (rand, uniform_). bfloat16
// and float16 draw float32 numbers and round them (Note [Reduced-precision compute]).
inline std::uint64_t counters_for_uniform(DType dtype, std::int64_t numel) {
  const std::int64_t per_counter = dtype == DType::Float64 ? 2 : 4;
  return static_cast<std::uint64_t>((numel + per_counter - 1) / per_counter);
}

// Counters for `numel` elements of a float32 or float64 normal fill (randn, normal_), as above.
inline std::uint64_t counters_for_normal(DType dtype, std::int64_t numel) {
  const std::int64_t per_counter = dtype == DType::Float64 ? 2 : 4;
  return static_cast<std::uint64_t>((numel + per_counter - 1) / per_counter);
}

}  // namespace grove::ops
