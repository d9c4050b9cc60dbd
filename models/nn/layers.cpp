// The parameter-free layers; see layers.h.
#include "models/nn/layers.h"

#include <sstream>

#include "core/error.h"
#include "ops/elementwise.h"
#include "ops/pool.h"
#include "ops/random.h"
#include "ops/shape.h"

namespace grove::nn {

Tensor ReLU::forward(const Tensor& input) {
  return ops::relu(input);
}

Tensor GELU::forward(const Tensor& input) {
  return ops::gelu(input, approximate_);
}

std::string GELU::extra_repr() const {
  return approximate_ ? "approximate=tanh" : "";
}

Dropout::Dropout(double p) : Module("Dropout"), p_(p) {
  GROVE_CHECK(p >= 0.0 && p < 1.0, "Dropout: expected a probability p in [0, 1), got ", p,
              "; p = 1 would drop everything and divide by zero");
}

Tensor Dropout::forward(const Tensor& input) {
  // Eval mode (or p = 0): the input itself.
  return ops::dropout(input, p_, is_training());
}

std::string Dropout::extra_repr() const {
  std::ostringstream out;
  out << "p=" << p_;
  return out.str();
}

MaxPool2d::MaxPool2d(std::int64_t kernel_size, std::optional<std::int64_t> stride)
    : Module("MaxPool2d"), kernel_size_(kernel_size), stride_(stride.value_or(kernel_size)) {
  GROVE_CHECK(kernel_size_ > 0 && stride_ > 0, "MaxPool2d: expected a positive kernel_size ",
              "and stride, got ", kernel_size_, " and ", stride_);
}

Tensor MaxPool2d::forward(const Tensor& input) {
  GROVE_CHECK(input.dim() == 4 || input.dim() == 3, "MaxPool2d: expected an input of shape ",
              "(N, C, H, W) or (C, H, W), got ", input.sizes());
  return ops::max_pool2d(input, {kernel_size_, kernel_size_}, {stride_, stride_});
}

std::string MaxPool2d::extra_repr() const {
  return "kernel_size=" + std::to_string(kernel_size_) + ", stride=" + std::to_string(stride_);
}

Tensor Flatten::forward(const Tensor& input) {
  return ops::flatten(input, start_dim_, end_dim_);
}

std::string Flatten::extra_repr() const {
  return "start_dim=" + std::to_string(start_dim_) + ", end_dim=" + std::to_string(end_dim_);
}

}  // namespace grove::nn
