// nn::Linear; see linear.h.
#include "models/nn/linear.h"

#include <cmath>

#include "core/error.h"
#include "models/nn/init.h"
#include "ops/linalg.h"

namespace grove::nn {

Linear::Linear(std::int64_t in_features, std::int64_t out_features, bool bias)
    : Module("Linear"), in_features_(in_features), out_features_(out_features), has_bias_(bias) {
  GROVE_CHECK(in_features >= 0 && out_features >= 0,
              "Linear: expected non-negative in_features and out_features, got ", in_features,
              " and ", out_features);
  const Tensor weight = register_parameter("weight", empty({out_features, in_features}));
  if (in_features > 0) {
    init::kaiming_uniform_(weight, std::sqrt(5.0));  // = U(-1/sqrt(in), 1/sqrt(in))
  } else {
    init::zeros_(weight);
  }
  if (bias) {
    const double bound = init::bias_bound(in_features);
    init::uniform_(register_parameter("bias", empty({out_features})), -bound, bound);
  }
}

Tensor Linear::forward(const Tensor& input) {
  GROVE_CHECK(input.dim() >= 1 && input.size(-1) == in_features_, "Linear: expected an input of ",
              "shape (*, ", in_features_, "), got ", input.sizes(),
              "; reshape or flatten the input so its last dim is in_features");
  return ops::linear(input, weight(), bias());  // (*, in) -> (*, out)
}

std::string Linear::extra_repr() const {
  return "in_features=" + std::to_string(in_features_) +
         ", out_features=" + std::to_string(out_features_) +
         ", bias=" + (has_bias_ ? "true" : "false");
}

}  // namespace grove::nn
