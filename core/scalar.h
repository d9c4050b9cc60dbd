// Scalar: one number of any dtype, passed to fill_, full, and (later) scalar forms of ops.
// It remembers whether it was given as a floating-point, integer or boolean value, so that
// full({2}, 3) can make an int64 tensor and full({2}, 3.5) a float32 one.
#pragma once

#include <cstdint>
#include <ostream>
#include <type_traits>

#include "core/dtype.h"

namespace grove {

class Scalar {
 public:
  enum class Kind : std::uint8_t { Floating, Integral, Boolean };

  Scalar() : Scalar(std::int64_t{0}) {}
  template <typename T>
  requires std::is_floating_point_v<T> Scalar(T value)
      : kind_(Kind::Floating), double_(static_cast<double>(value)) {}  // NOLINT
  template <typename T>
  requires(std::is_integral_v<T> && !std::is_same_v<T, bool>) Scalar(T value)
      : kind_(Kind::Integral), int_(static_cast<std::int64_t>(value)) {}  // NOLINT
  Scalar(bool value) : kind_(Kind::Boolean), int_(value ? 1 : 0) {}       // NOLINT

  Kind kind() const { return kind_; }
  bool is_floating_point() const { return kind_ == Kind::Floating; }

  // Converts to T with C++ conversion rules (bool: non-zero is true).
  template <typename T>
  T to() const {
    if (kind_ == Kind::Floating) {
      if constexpr (std::is_same_v<T, bool>) return double_ != 0.0;
      return static_cast<T>(double_);
    }
    if constexpr (std::is_same_v<T, bool>) return int_ != 0;
    return static_cast<T>(int_);
  }

  // True if the value survives conversion to `dtype` unchanged in kind and range: integers
  // within the integer type's range (0 or 1 for bool); any value for floating dtypes.
  bool fits(DType dtype) const;
  // True if an element of `dtype` holds exactly this value (up to a floating dtype's rounding):
  // what fill_ and full require. Unlike fits(), a floating value must be whole for an integer
  // dtype (2.5 does not fill an int64 tensor), a bool takes 0, 1, false or true only, and a
  // finite value must stay finite (70000 does not fill a float16 tensor: it would be inf).
  bool fits_exactly(DType dtype) const;
  // The smallest magnitude a floating dtype rounds to an infinity (65520 for float16); infinity
  // for float64 and the integer dtypes.
  static double finite_limit(DType dtype);

  // The dtype a tensor made from this scalar alone gets: float32, int64 or bool.
  DType default_dtype() const;

 private:
  Kind kind_;
  union {
    double double_;
    std::int64_t int_;
  };
};

std::ostream& operator<<(std::ostream& out, const Scalar& scalar);

}  // namespace grove
