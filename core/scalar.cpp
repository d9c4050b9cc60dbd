#include "core/scalar.h"

#include <cmath>

#include <limits>

namespace grove {

DType Scalar::default_dtype() const {
  switch (kind_) {
    case Kind::Floating:
      return DType::Float32;
    case Kind::Integral:
      return DType::Int64;
    case Kind::Boolean:
      return DType::Bool;
  }
  return DType::Float32;
}

bool Scalar::fits(DType dtype) const {
  if (grove::is_floating_point(dtype)) return true;
  // Floating values are checked against the range here; their fractional part is the
  // caller's concern.
  const double value = kind_ == Kind::Floating ? double_ : static_cast<double>(int_);
  switch (dtype) {
    case DType::Int64:
      return kind_ != Kind::Floating ||
             (value >= -9223372036854775808.0 && value < 9223372036854775808.0);
    case DType::Int32:
      return value >= std::numeric_limits<std::int32_t>::lowest() &&
             value <= std::numeric_limits<std::int32_t>::max();
    case DType::Bool:
      return value == 0.0 || value == 1.0;
    default:
      return true;
  }
}

double Scalar::finite_limit(DType dtype) {
  // The smallest magnitude each floating dtype rounds to an infinity: its largest finite value
  // plus half a unit in the last place (a tie there rounds to the even neighbour, infinity).
  switch (dtype) {
    case DType::Float32:
      return 0x1.ffffffp127;  // 2^128 - 2^103
    case DType::BFloat16:
      return 0x1.ffp127;  // 2^128 - 2^119
    case DType::Float16:
      return 65520.0;  // 65504 + 16
    default:
      return std::numeric_limits<double>::infinity();
  }
}

bool Scalar::fits_exactly(DType dtype) const {
  if (grove::is_floating_point(dtype)) {
    const double value = to<double>();
    return !std::isfinite(value) || std::fabs(value) < finite_limit(dtype);
  }
  if (kind_ == Kind::Floating && (!std::isfinite(double_) || std::trunc(double_) != double_)) {
    return false;  // NaN, an infinity or a fraction has no integer or bool to be
  }
  return fits(dtype);
}

std::ostream& operator<<(std::ostream& out, const Scalar& scalar) {
  switch (scalar.kind()) {
    case Scalar::Kind::Floating:
      return out << scalar.to<double>();
    case Scalar::Kind::Integral:
      return out << scalar.to<std::int64_t>();
    case Scalar::Kind::Boolean:
      return out << (scalar.to<bool>() ? "true" : "false");
  }
  return out;
}

}  // namespace grove
