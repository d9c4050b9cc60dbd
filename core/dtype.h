// DType: the element types a tensor can hold, their sizes and names, and the one switch that
// turns a runtime dtype into a compile-time C++ type for kernels (dispatch_dtype, with the
// floating-only dispatch_floating), used alike by CPU kernels (.cpp) and CUDA kernels (.cu).
//
// bfloat16 is not here yet; the enum leaves room for it (add the value, its C++ type, its size).
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string_view>
#include <utility>

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

// The dtypes a dispatch accepts.
enum class DTypes : std::uint8_t {
  All,         // float32, float64, int64, int32, bool
  AllButBool,  // the arithmetic ones
  Floating,    // float32, float64
};

// Calls body.template operator()<T>() with T the C++ type of `dtype` (float, double,
// std::int64_t, std::int32_t, bool) and returns what it returns:
//   dispatch_dtype(x.dtype(), "where", [&]<typename T>() { ... });
// Only the types in kAccepted are instantiated, so the body may use operations that the other
// types lack. A dtype outside kAccepted is a bug in grove (the op's infer refuses it): an
// internal error naming `what` (the op) and the dtype. Host code; .cu files use it to pick a
// kernel's template argument.
template <DTypes kAccepted = DTypes::All, typename Body>
decltype(auto) dispatch_dtype(DType dtype, std::string_view what, Body&& body) {
  constexpr bool kIntegers = kAccepted != DTypes::Floating;
  constexpr bool kBool = kAccepted == DTypes::All;
  switch (dtype) {
    case DType::Float32:
      return body.template operator()<float>();
    case DType::Float64:
      return body.template operator()<double>();
    case DType::Int64:
      if constexpr (kIntegers) return body.template operator()<std::int64_t>();
      break;
    case DType::Int32:
      if constexpr (kIntegers) return body.template operator()<std::int32_t>();
      break;
    case DType::Bool:
      if constexpr (kBool) return body.template operator()<bool>();
      break;
  }
  detail::throw_internal("the dtype is one the kernel accepts",
                         detail::join_message(what, " reached a kernel with dtype ", dtype,
                                              "; its infer should have refused it"),
                         __FILE__, __LINE__);
}

// dispatch_dtype for the floating-point dtypes only: T is float or double.
template <typename Body>
decltype(auto) dispatch_floating(DType dtype, std::string_view what, Body&& body) {
  return dispatch_dtype<DTypes::Floating>(dtype, what, std::forward<Body>(body));
}

}  // namespace grove
