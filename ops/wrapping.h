// Integer arithmetic that wraps around (two's complement) instead of overflowing, which would be
// undefined behaviour: add, sub and mul of the elementwise kernels, shared by the CPU kernels
// (ops/cpu/elementwise.cpp) and the CUDA kernels (ops/cuda/elementwise.cu) so that both devices
// compute the same expression. Floating-point and bool operands take the plain operation. Plain
// C++ with host/device qualifiers when nvcc compiles it.
#pragma once

#include <type_traits>

#include "core/host_device.h"

namespace grove::ops {

// a op b for op '+', '-' or '*'; integers are computed in the unsigned type and converted back.
template <typename T>
GROVE_HOST_DEVICE inline T wrapping(T a, T b, char op) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using U = std::make_unsigned_t<T>;
    const U x = static_cast<U>(a);
    const U y = static_cast<U>(b);
    return static_cast<T>(op == '+' ? U(x + y) : op == '-' ? U(x - y) : U(x * y));
  } else {
    return op == '+' ? T(a + b) : op == '-' ? T(a - b) : T(a * b);
  }
}

}  // namespace grove::ops
