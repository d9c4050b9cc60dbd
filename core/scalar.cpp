#include "core/scalar.h"

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
