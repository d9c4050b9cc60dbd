// zoo::Cnn; see cnn.h.
#include "models/zoo/cnn.h"

#include "core/error.h"
#include "ops/elementwise.h"
#include "ops/pool.h"

namespace grove::zoo {

Cnn::Cnn() : nn::Module("Cnn") {
  c1_ = register_module("c1", std::make_shared<nn::Conv2d>(1, 32, 3, /*stride=*/1, /*padding=*/1));
  c2_ = register_module("c2", std::make_shared<nn::Conv2d>(32, 64, 3, /*stride=*/1, /*padding=*/1));
  fc1_ = register_module("fc1", std::make_shared<nn::Linear>(64 * 7 * 7, 128));
  fc2_ = register_module("fc2", std::make_shared<nn::Linear>(128, kClasses));
}

Tensor Cnn::forward(const Tensor& input) {
  GROVE_CHECK(input.dim() == 4 && input.size(1) == 1 && input.size(2) == 28 && input.size(3) == 28,
              "Cnn: expected images of shape (B, 1, 28, 28), got ", input.sizes());
  Tensor x = ops::max_pool2d(ops::relu(c1_->forward(input)), {2, 2});  // (B, 32, 14, 14)
  x = ops::max_pool2d(ops::relu(c2_->forward(x)), {2, 2});             // (B, 64, 7, 7)
  x = x.reshape({x.size(0), 64 * 7 * 7});                              // (B, 3136)
  x = ops::relu(fc1_->forward(x));                                     // (B, 128)
  return fc2_->forward(x);                                             // (B, 10)
}

}  // namespace grove::zoo
