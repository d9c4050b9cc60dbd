// The device twin of core/rng.h: Philox 4x32-10, the float/double uniform recipes, and the
// seed/offset lookup of PhiloxArgs, as __device__ functions that compute exactly what the host
// versions compute (same rounds, same constants, same bit manipulations), so that a CUDA random
// kernel and its CPU reference (ops/cpu/random.h) draw the same words for the same generator
// state. Only .cu files include this header.
//
// A captured CUDA kernel gets PhiloxArgs whose `cell` points at device memory written before each
// replay; see Note [Random numbers in captured graphs] in core/rng.h.
#pragma once

#include <cstdint>

#include "core/rng.h"

namespace grove::ops::cuda {

struct PhiloxWords4 {
  std::uint32_t word[4];
};

// philox4x32_10 of core/rng.cpp: the high and low halves of each 32x32 product by __umulhi and
// an ordinary (wrapping) multiply.
__device__ inline PhiloxWords4 philox4x32_10(std::uint64_t counter_low, std::uint64_t counter_high,
                                             std::uint64_t key) {
  constexpr std::uint32_t kMultiplier0 = 0xD2511F53u;
  constexpr std::uint32_t kMultiplier1 = 0xCD9E8D57u;
  constexpr std::uint32_t kWeyl0 = 0x9E3779B9u;
  constexpr std::uint32_t kWeyl1 = 0xBB67AE85u;
  std::uint32_t x0 = static_cast<std::uint32_t>(counter_low);
  std::uint32_t x1 = static_cast<std::uint32_t>(counter_low >> 32);
  std::uint32_t x2 = static_cast<std::uint32_t>(counter_high);
  std::uint32_t x3 = static_cast<std::uint32_t>(counter_high >> 32);
  std::uint32_t k0 = static_cast<std::uint32_t>(key);
  std::uint32_t k1 = static_cast<std::uint32_t>(key >> 32);
#pragma unroll
  for (int round = 0; round < 10; ++round) {
    const std::uint32_t high0 = __umulhi(kMultiplier0, x0);
    const std::uint32_t low0 = kMultiplier0 * x0;
    const std::uint32_t high1 = __umulhi(kMultiplier1, x2);
    const std::uint32_t low1 = kMultiplier1 * x2;
    x0 = high1 ^ x1 ^ k0;
    x1 = low1;
    x2 = high0 ^ x3 ^ k1;
    x3 = low0;
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return {{x0, x1, x2, x3}};
}

// uniform_float / uniform_double of core/rng.h. Both products are by a power of two and exact;
// the explicit _rn intrinsics keep nvcc from contracting them into a caller's addition.
__device__ inline float device_uniform_float(std::uint32_t bits) {
  return __fmul_rn(static_cast<float>(bits >> 8), 1.0f / 16777216.0f);
}
__device__ inline double device_uniform_double(std::uint32_t high, std::uint32_t low) {
  const std::uint64_t bits = (static_cast<std::uint64_t>(high) << 21) ^ (low >> 11);
  return __dmul_rn(static_cast<double>(bits & ((1ULL << 53) - 1)), 1.0 / 9007199254740992.0);
}

// PhiloxArgs::resolve, reading the graph's cell (device memory) when the kernel runs.
struct ResolvedPhilox {
  std::uint64_t seed;
  std::uint64_t offset;
};
__device__ inline ResolvedPhilox resolve(const PhiloxArgs& args) {
  if (args.cell != nullptr) return {args.cell->seed, args.cell->offset + args.offset};
  return {args.seed, args.offset};
}

}  // namespace grove::ops::cuda
