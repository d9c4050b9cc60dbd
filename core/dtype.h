// DType: the element types a tensor can hold, their sizes and names, and a switch that turns a
// runtime dtype into a compile-time C++ type for kernels.
//
// bfloat16 is not here yet; the enum leaves room for it (add the value, its C++ type, its size).
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string_view>

#include "core/error.h"

namespace grove {

enum class DType : std::uint8_t {
  Float32,
  Float64,
  Int64,
  Int32,
  Bool,
};

std::size_t element_size(DType dtype);
std::string_view dtype_name(DType dtype);  // "float32", "int64", ...
std::ostream& operator<<(std::ostream& out, DType dtype);

inline bool is_floating_point(DType dtype) {
  return dtype == DType::Float32 || dtype == DType::Float64;
}

// C++ type -> DType, for factories such as from_vector<T>.
template <typename T>
struct DTypeOf;
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::Float32;
};
template <>
struct DTypeOf<double> {
  static constexpr DType value = DType::Float64;
};
template <>
struct DTypeOf<std::int64_t> {
  static constexpr DType value = DType::Int64;
};
template <>
struct DTypeOf<std::int32_t> {
  static constexpr DType value = DType::Int32;
};
template <>
struct DTypeOf<bool> {
  static constexpr DType value = DType::Bool;
};
template <typename T>
inline constexpr DType dtype_of = DTypeOf<T>::value;

}  // namespace grove

// GROVE_DISPATCH_DTYPE(dtype, "op name", [&]<typename scalar_t>() { ... }) calls the generic
// lambda with scalar_t bound to the C++ type of `dtype`. Used by kernels.
#define GROVE_DISPATCH_DTYPE(dtype, op_name, ...)             \
  [&]() {                                                     \
    auto&& grove_fn_ = __VA_ARGS__;                           \
    switch (dtype) {                                          \
      case ::grove::DType::Float32:                           \
        return grove_fn_.template operator()<float>();        \
      case ::grove::DType::Float64:                           \
        return grove_fn_.template operator()<double>();       \
      case ::grove::DType::Int64:                             \
        return grove_fn_.template operator()<std::int64_t>(); \
      case ::grove::DType::Int32:                             \
        return grove_fn_.template operator()<std::int32_t>(); \
      case ::grove::DType::Bool:                              \
        return grove_fn_.template operator()<bool>();         \
    }                                                         \
    GROVE_INTERNAL_ASSERT(false, op_name, ": unknown dtype"); \
  }()
