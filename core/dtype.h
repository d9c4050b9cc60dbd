// DType: the element types a tensor can hold, their sizes and names, and the one switch that
// turns a runtime dtype into a compile-time C++ type for kernels (dispatch_dtype, with the
// floating-only dispatch_floating), used alike by CPU kernels (.cpp) and CUDA kernels (.cu).
//
// The 16-bit floating dtypes (bfloat16, float16: core/reduced_float.h) are stored like the
// others; ops compute them in float32 (Note [Reduced-precision compute] in ops/reduced_compute.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string_view>
#include <utility>

#include "core/error.h"
#include "core/reduced_float.h"

namespace grove {

enum class DType : std::uint8_t {
  Float32,
  Float64,
  Int64,
  Int32,
  Bool,
  BFloat16,
  Float16,
};

std::size_t element_size(DType dtype);
std::string_view dtype_name(DType dtype);  // "float32", "int64", ...
std::ostream& operator<<(std::ostream& out, DType dtype);

inline bool is_floating_point(DType dtype) {
  return dtype == DType::Float32 || dtype == DType::Float64 || dtype == DType::BFloat16 ||
         dtype == DType::Float16;
}

// bfloat16 and float16: floating dtypes narrower than float32, computed in float32.
inline bool is_reduced_float(DType dtype) {
  return dtype == DType::BFloat16 || dtype == DType::Float16;
}

// The dtype values of `dtype` are computed in: float32 for bfloat16 and float16, else `dtype`.
// Statistics an op saves for its backward (attention's and cross_entropy's log-sum-exp, the
// norms' mean and reciprocal deviations) are kept in it: rounded to 8 or 11 bits, the backward's
// recomputed values would be off by about 1%, as flash attention and PyTorch's norms know.
inline DType compute_dtype(DType dtype) {
  return is_reduced_float(dtype) ? DType::Float32 : dtype;
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
template <>
struct DTypeOf<BFloat16> {
  static constexpr DType value = DType::BFloat16;
};
template <>
struct DTypeOf<Float16> {
  static constexpr DType value = DType::Float16;
};
template <typename T>
inline constexpr DType dtype_of = DTypeOf<T>::value;

// The dtypes a dispatch accepts.
// The 16-bit floating dtypes are in Stored and in the *AndReduced sets only: the kernels that
// move or fill elements (copy, fill, item) take them, and so do the kernels whose op entry says
// they do (they compute in float32); any other kernel never sees them, the dispatcher hands it
// float32 (Note [Reduced-precision compute] in ops/reduced_compute.h).
enum class DTypes : std::uint8_t {
  Stored,                // every dtype: the five below and bfloat16, float16
  All,                   // float32, float64, int64, int32, bool: every dtype a kernel computes in
  AllButBool,            // the arithmetic ones
  Floating,              // float32, float64
  ArithmeticAndReduced,  // AllButBool, bfloat16, float16
  FloatingAndReduced,    // float32, float64, bfloat16, float16
};

// Calls body.template operator()<T>() with T the C++ type of `dtype` (float, double,
// std::int64_t, std::int32_t, bool; BFloat16, Float16 for the sets that hold them) and returns what
// it returns:
//   dispatch_dtype(x.dtype(), "where", [&]<typename T>() { ... });
// Only the types in kAccepted are instantiated, so the body may use operations that the other
// types lack. A dtype outside kAccepted is a bug in grove (the op's infer refuses it): an
// internal error naming `what` (the op) and the dtype. Host code; .cu files use it to pick a
// kernel's template argument.
template <DTypes kAccepted = DTypes::All, typename Body>
decltype(auto) dispatch_dtype(DType dtype, std::string_view what, Body&& body) {
  constexpr bool kIntegers =
      kAccepted != DTypes::Floating && kAccepted != DTypes::FloatingAndReduced;
  constexpr bool kBool = kAccepted == DTypes::All || kAccepted == DTypes::Stored;
  constexpr bool kReduced = kAccepted == DTypes::Stored ||
                            kAccepted == DTypes::ArithmeticAndReduced ||
                            kAccepted == DTypes::FloatingAndReduced;
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
    case DType::BFloat16:
      if constexpr (kReduced) return body.template operator()<BFloat16>();
      break;
    case DType::Float16:
      if constexpr (kReduced) return body.template operator()<Float16>();
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
