// The 16-bit floating-point element types: BFloat16 (bfloat16: float32's 8-bit exponent, a 7-bit
// mantissa) and Float16 (IEEE 754 binary16: a 5-bit exponent, a 10-bit mantissa). Each holds
// its 16 bits and converts to and from the other element types by the rule below, the same
// expression on the CPU and the GPU (compiled by g++ and nvcc alike). grove computes with them
// in float32: a kernel loads a 16-bit value, widens it (exactly), computes in float, and rounds
// the result once when it stores it (Note [Reduced-precision compute] in ops/reduced_compute.h).
//
//   bfloat16  sign | exponent (8, bias 127) | mantissa (7)   largest 3.39e38, epsilon 2^-7
//   float16   sign | exponent (5, bias 15)  | mantissa (10)  largest 65504,   epsilon 2^-10
//
// Note [Rounding to a 16-bit float]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Widening (16 bits to float32 or float64) is exact. Narrowing is defined for every input:
//   - a finite value rounds to the nearest representable one; a tie goes to the one whose last
//     mantissa bit is 0 (round-to-nearest-even, IEEE 754's default), subnormals included;
//   - a value at or beyond the largest finite value plus half a unit in its last place (65520
//     for float16, about 3.39e38 for bfloat16) becomes an infinity of its sign, as do the
//     infinities; there is no saturation (PyTorch and the GPU's conversion instructions agree);
//   - NaN stays NaN: its sign and the top bits of its payload are kept and the quiet bit is set
//     (so a signalling NaN becomes quiet, never an infinity);
//   - float64 is rounded once, directly to the 16-bit type: it is first narrowed to float32 by
//     rounding to odd (truncate, then set the last bit if anything was cut off), which keeps
//     enough information that the second rounding gives the correctly rounded result;
//   - integers convert through float64 (exact up to 2^53; beyond that the double rounding may
//     differ from a direct rounding by one unit in the last place);
//   - to an integer or bool, the value is widened to float32 and follows
//     Note [Converting floating-point values to integers] (core/convert.h).
// tests/core/reduced_float_test.cpp checks each rule against exact bit patterns.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/host_device.h"

namespace grove {
namespace reduced_float {

// The bits of a float and back (a memcpy the compilers turn into a register move).
GROVE_HOST_DEVICE inline std::uint32_t bits_of(float value) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(value);
#else
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
#endif
}
GROVE_HOST_DEVICE inline float float_from_bits(std::uint32_t bits) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(bits);
#else
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
#endif
}

// float64 -> float32 rounded to odd: exact values are kept; an inexact one becomes the float32
// next toward zero with its last mantissa bit set. See Note [Rounding to a 16-bit float].
GROVE_HOST_DEVICE inline float round_to_odd(double value) {
  const float nearest = static_cast<float>(value);  // NaN stays NaN, with its sign
  const double back = static_cast<double>(nearest);
  if (back == value || value != value) return nearest;
  std::uint32_t bits = bits_of(nearest);
  // nearest has value's sign; stepping its magnitude down one unit moves toward zero (an
  // infinity steps to the largest finite float32).
  if ((back < 0 ? -back : back) > (value < 0 ? -value : value)) bits -= 1;
  return float_from_bits(bits | 1u);
}

GROVE_HOST_DEVICE inline std::uint16_t bfloat16_bits(float value) {
  const std::uint32_t bits = bits_of(value);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) {
    return static_cast<std::uint16_t>((bits >> 16) | 0x0040u);  // NaN: keep it, set quiet
  }
  // Adding 0x7FFF rounds the low 16 bits half-down; adding the kept part's last bit as well
  // turns an exact half into a round to even. A carry may run into the exponent (the next
  // binade, or infinity past the largest value), which is the right result.
  const std::uint32_t rounding = 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>((bits + rounding) >> 16);
}

GROVE_HOST_DEVICE inline float float_of_bfloat16(std::uint16_t bits) {
  return float_from_bits(static_cast<std::uint32_t>(bits) << 16);
}

// Rounds `kept` (the value in units of the result's last place) up by the cut-off `rest` of
// `cut` bits, to nearest, ties to even.
GROVE_HOST_DEVICE inline std::uint32_t round_nearest_even(std::uint32_t kept, std::uint32_t rest,
                                                          int cut) {
  const std::uint32_t half = 1u << (cut - 1);
  return kept + ((rest > half || (rest == half && (kept & 1u))) ? 1u : 0u);
}

GROVE_HOST_DEVICE inline std::uint16_t float16_bits(float value) {
  const std::uint32_t bits = bits_of(value);
  const std::uint32_t sign = (bits >> 16) & 0x8000u;
  const std::uint32_t magnitude = bits & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) {  // NaN: sign, the payload's top 9 bits, quiet bit set
    return static_cast<std::uint16_t>(sign | 0x7E00u | ((magnitude >> 13) & 0x01FFu));
  }
  if (magnitude >= 0x477FF000u) {  // >= 65520 = 65504 + half a unit: infinity
    return static_cast<std::uint16_t>(sign | 0x7C00u);
  }
  const std::uint32_t exponent = magnitude >> 23;  // biased by 127
  const std::uint32_t mantissa = magnitude & 0x007FFFFFu;
  if (exponent >= 113) {  // >= 2^-14: a normal float16; rebias 127 -> 15, keep 10 of 23 bits
    const std::uint32_t kept = ((exponent - 112) << 10) | (mantissa >> 13);
    return static_cast<std::uint16_t>(sign | round_nearest_even(kept, mantissa & 0x1FFFu, 13));
  }
  if (exponent < 102) return static_cast<std::uint16_t>(sign);  // < 2^-25: rounds to zero
  // A float16 subnormal counts units of 2^-24: value / 2^-24 = significand * 2^(exponent-126),
  // with the implicit leading bit in the significand; cut = 126 - exponent is 14 to 24.
  const std::uint32_t significand = mantissa | 0x00800000u;
  const int cut = static_cast<int>(126 - exponent);
  const std::uint32_t kept = significand >> cut;
  const std::uint32_t rest = significand & ((1u << cut) - 1u);
  // A carry out of the subnormals gives 0x0400, the smallest normal: the right encoding.
  return static_cast<std::uint16_t>(sign | round_nearest_even(kept, rest, cut));
}

GROVE_HOST_DEVICE inline float float_of_float16(std::uint16_t bits) {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1Fu;
  const std::uint32_t mantissa = bits & 0x03FFu;
  if (exponent == 0x1Fu) {  // infinity, or NaN (payload kept, quiet bit set)
    return float_from_bits(sign | 0x7F800000u | (mantissa != 0 ? 0x00400000u : 0u) |
                           (mantissa << 13));
  }
  if (exponent != 0) return float_from_bits(sign | ((exponent + 112) << 23) | (mantissa << 13));
  // Zero or subnormal: mantissa units of 2^-24, exact in float32.
  const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-08f;
  return sign != 0 ? -magnitude : magnitude;
}

// The value as float64 before rounding: see Note [Rounding to a 16-bit float].
template <typename From>
GROVE_HOST_DEVICE inline float narrowable(From value) {
  if constexpr (std::is_same_v<From, float>) {
    return value;
  } else if constexpr (std::is_same_v<From, bool>) {
    return value ? 1.0f : 0.0f;
  } else {
    return round_to_odd(static_cast<double>(value));
  }
}

}  // namespace reduced_float

// bfloat16. Construct from any arithmetic value (rounded by Note [Rounding to a 16-bit float]);
// read with static_cast<float>. No arithmetic operators: kernels compute in float.
struct BFloat16 {
  std::uint16_t bits;

  BFloat16() = default;
  template <typename T>
  requires std::is_arithmetic_v<T> GROVE_HOST_DEVICE explicit BFloat16(T value)
      : bits(reduced_float::bfloat16_bits(reduced_float::narrowable(value))) {}
  GROVE_HOST_DEVICE static BFloat16 from_bits(std::uint16_t raw) {
    BFloat16 result;
    result.bits = raw;
    return result;
  }
  GROVE_HOST_DEVICE explicit operator float() const {
    return reduced_float::float_of_bfloat16(bits);
  }
};

// float16 (IEEE binary16), the twin of BFloat16.
struct Float16 {
  std::uint16_t bits;

  Float16() = default;
  template <typename T>
  requires std::is_arithmetic_v<T> GROVE_HOST_DEVICE explicit Float16(T value)
      : bits(reduced_float::float16_bits(reduced_float::narrowable(value))) {}
  GROVE_HOST_DEVICE static Float16 from_bits(std::uint16_t raw) {
    Float16 result;
    result.bits = raw;
    return result;
  }
  GROVE_HOST_DEVICE explicit operator float() const {
    return reduced_float::float_of_float16(bits);
  }
};

template <typename T>
inline constexpr bool is_reduced_float_v =
    std::is_same_v<T, BFloat16> || std::is_same_v<T, Float16>;

}  // namespace grove
