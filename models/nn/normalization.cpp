// nn::LayerNorm; see normalization.h.
#include "models/nn/normalization.h"

#include <cmath>
#include <sstream>

#include "core/error.h"
#include "ops/layer_norm.h"

namespace grove::nn {

LayerNorm::LayerNorm(std::vector<std::int64_t> normalized_shape, double eps,
                     bool elementwise_affine)
    : Module("LayerNorm"),
      normalized_shape_(std::move(normalized_shape)),
      eps_(eps),
      affine_(elementwise_affine) {
  GROVE_CHECK(!normalized_shape_.empty(), "LayerNorm: expected a non-empty normalized_shape");
  for (const std::int64_t size : normalized_shape_) {
    GROVE_CHECK(size > 0, "LayerNorm: expected positive sizes in normalized_shape, got ",
                IntArrayRef(normalized_shape_));
  }
  GROVE_CHECK(std::isfinite(eps) && eps >= 0.0, "LayerNorm: expected a finite eps >= 0, got ", eps,
              " (the default is 1e-5)");
  if (affine_) {
    register_parameter("weight", ones(normalized_shape_));
    register_parameter("bias", zeros(normalized_shape_));
  }
}

Tensor LayerNorm::forward(const Tensor& input) {
  const auto rank = static_cast<std::int64_t>(normalized_shape_.size());
  bool fits = input.dim() >= rank;
  for (std::int64_t i = 0; fits && i < rank; ++i) {
    fits = input.size(input.dim() - rank + i) == normalized_shape_[static_cast<std::size_t>(i)];
  }
  GROVE_CHECK(fits, "LayerNorm: expected an input whose trailing dims are ",
              IntArrayRef(normalized_shape_), ", got shape ", input.sizes());
  return ops::layer_norm(input, normalized_shape_, weight(), bias(), eps_);
}

std::string LayerNorm::extra_repr() const {
  std::ostringstream out;
  out << IntArrayRef(normalized_shape_) << ", eps=" << eps_
      << ", elementwise_affine=" << (affine_ ? "true" : "false");
  return out.str();
}

}  // namespace grove::nn
