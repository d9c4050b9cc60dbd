// nn::LayerNorm and nn::RMSNorm; see normalization.h.
#include "models/nn/normalization.h"

#include <cmath>
#include <sstream>

#include "core/error.h"
#include "ops/layer_norm.h"
#include "ops/rms_norm.h"

namespace grove::nn {
namespace {

// The constructor's arguments: a non-empty shape of positive sizes, a finite eps >= 0.
void check_arguments(const char* module, const std::vector<std::int64_t>& normalized_shape,
                     std::optional<double> eps, const char* default_eps) {
  GROVE_CHECK(!normalized_shape.empty(), module, ": expected a non-empty normalized_shape");
  for (const std::int64_t size : normalized_shape) {
    GROVE_CHECK(size > 0, module, ": expected positive sizes in normalized_shape, got ",
                IntArrayRef(normalized_shape));
  }
  GROVE_CHECK(!eps.has_value() || (std::isfinite(*eps) && *eps >= 0.0), module,
              ": expected a finite eps >= 0, got ", eps.value_or(0.0), " (the default is ",
              default_eps, ")");
}

// The input's trailing dims are the module's normalized_shape.
void check_input(const char* module, const Tensor& input,
                 const std::vector<std::int64_t>& normalized_shape) {
  const auto rank = static_cast<std::int64_t>(normalized_shape.size());
  bool fits = input.dim() >= rank;
  for (std::int64_t i = 0; fits && i < rank; ++i) {
    fits = input.size(input.dim() - rank + i) == normalized_shape[static_cast<std::size_t>(i)];
  }
  GROVE_CHECK(fits, module, ": expected an input whose trailing dims are ",
              IntArrayRef(normalized_shape), ", got shape ", input.sizes());
}

}  // namespace

LayerNorm::LayerNorm(std::vector<std::int64_t> normalized_shape, double eps,
                     bool elementwise_affine)
    : Module("LayerNorm"),
      normalized_shape_(std::move(normalized_shape)),
      eps_(eps),
      affine_(elementwise_affine) {
  check_arguments("LayerNorm", normalized_shape_, eps, "1e-5");
  if (affine_) {
    register_parameter("weight", ones(normalized_shape_));
    register_parameter("bias", zeros(normalized_shape_));
  }
}

Tensor LayerNorm::forward(const Tensor& input) {
  check_input("LayerNorm", input, normalized_shape_);
  return ops::layer_norm(input, normalized_shape_, weight(), bias(), eps_);
}

std::string LayerNorm::extra_repr() const {
  std::ostringstream out;
  out << IntArrayRef(normalized_shape_) << ", eps=" << eps_
      << ", elementwise_affine=" << (affine_ ? "true" : "false");
  return out.str();
}

RMSNorm::RMSNorm(std::vector<std::int64_t> normalized_shape, std::optional<double> eps,
                 bool elementwise_affine)
    : Module("RMSNorm"),
      normalized_shape_(std::move(normalized_shape)),
      eps_(eps),
      affine_(elementwise_affine) {
  check_arguments("RMSNorm", normalized_shape_, eps, "the input dtype's machine epsilon");
  if (affine_) register_parameter("weight", ones(normalized_shape_));
}

Tensor RMSNorm::forward(const Tensor& input) {
  check_input("RMSNorm", input, normalized_shape_);
  return ops::rms_norm(input, normalized_shape_, weight(), eps_);
}

std::string RMSNorm::extra_repr() const {
  std::ostringstream out;
  out << IntArrayRef(normalized_shape_) << ", eps=";
  if (eps_.has_value()) {
    out << *eps_;
  } else {
    out << "None";
  }
  out << ", elementwise_affine=" << (affine_ ? "true" : "false");
  return out.str();
}

}  // namespace grove::nn
