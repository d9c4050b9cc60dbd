// zoo::Mlp; see mlp.h.
#include "models/zoo/mlp.h"

#include "core/error.h"
#include "ops/elementwise.h"

namespace grove::zoo {

Mlp::Mlp() : nn::Module("Mlp") {
  fc1_ = register_module("fc1", std::make_shared<nn::Linear>(kInputs, kHidden));
  fc2_ = register_module("fc2", std::make_shared<nn::Linear>(kHidden, kHidden));
  fc3_ = register_module("fc3", std::make_shared<nn::Linear>(kHidden, kClasses));
}

Tensor Mlp::forward(const Tensor& input) {
  GROVE_CHECK(input.dim() >= 1 && input.numel() == input.size(0) * kInputs,
              "Mlp: expected images of shape (B, 1, 28, 28) or (B, 784), got ", input.sizes());
  Tensor x = input.reshape({input.size(0), kInputs});  // (B, 784)
  x = ops::relu(fc1_->forward(x));                     // (B, 256)
  x = ops::relu(fc2_->forward(x));                     // (B, 256)
  return fc3_->forward(x);                             // (B, 10)
}

}  // namespace grove::zoo
