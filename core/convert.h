// Converting one element from one dtype to another: the rule of every copy between dtypes
// (Tensor::to(dtype), copy_ into a tensor of another dtype), on every device. Compiled for host
// and device: core/copy_kernel.cpp and core/cuda/copy_kernel.cu call the same function.
//
// Note [Converting floating-point values to integers]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// In C++ a floating-point value outside an integer type's range, NaN and the infinities
// included, has no conversion: static_cast is undefined behaviour, and the CPU and the GPU gave
// different integers for it. grove defines one rule for both devices, checked by no device
// synchronisation (a copy may be queued on a stream or captured in a graph):
//   - a value in range is truncated toward zero, as C++ converts it (2.9 -> 2, -2.9 -> -2);
//   - a value at or above the type's largest + 1 (+inf included) saturates to its largest, a
//     value below its smallest (-inf included) to its smallest;
//   - NaN becomes 0.
// To bool every value that is not zero is true (NaN too), as in C++ and PyTorch. An integer
// converted to a narrower integer (int64 to int32) keeps its low bits, as C++20 defines it.
// bfloat16 and float16 follow Note [Rounding to a 16-bit float] (core/reduced_float.h): they
// widen exactly to float32 and go on from there; values narrowed to them round to nearest even.
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/host_device.h"
#include "core/reduced_float.h"

namespace grove {

// The range of the integer dtypes' element types, as plain constants (usable in device code).
template <typename T>
struct IntegerRange;
template <>
struct IntegerRange<std::int32_t> {
  static constexpr std::int32_t lowest = -2147483647 - 1;
  static constexpr std::int32_t highest = 2147483647;
};
template <>
struct IntegerRange<std::int64_t> {
  static constexpr std::int64_t lowest = -9223372036854775807LL - 1;
  static constexpr std::int64_t highest = 9223372036854775807LL;
};

// See Note [Converting floating-point values to integers].
template <typename To, typename From>
GROVE_HOST_DEVICE constexpr To convert_element(From value) {
  if constexpr (std::is_same_v<To, From>) {
    return value;
  } else if constexpr (is_reduced_float_v<From>) {
    return convert_element<To>(static_cast<float>(value));  // widening is exact
  } else if constexpr (is_reduced_float_v<To>) {
    return To(value);
  } else if constexpr (std::is_same_v<To, bool>) {
    return value != From(0);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    // -2^31 and -2^63 are exact in float and double, and so are their negations, the first
    // values past the largest.
    constexpr From low = static_cast<From>(IntegerRange<To>::lowest);
    constexpr From past_high = -low;
    if (value != value) return To(0);  // NaN
    if (value >= past_high) return IntegerRange<To>::highest;
    if (value < low) return IntegerRange<To>::lowest;
    return static_cast<To>(value);
  } else {
    return static_cast<To>(value);
  }
}

}  // namespace grove
