// nn::Conv2d; see conv.h.
#include "models/nn/conv.h"

#include <cmath>

#include "core/error.h"
#include "models/nn/init.h"
#include "ops/conv.h"

namespace grove::nn {

Conv2d::Conv2d(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel_size,
               std::int64_t stride, std::int64_t padding, bool bias)
    : Module("Conv2d"),
      in_channels_(in_channels),
      out_channels_(out_channels),
      kernel_size_(kernel_size),
      stride_(stride),
      padding_(padding),
      has_bias_(bias) {
  GROVE_CHECK(in_channels > 0 && out_channels > 0 && kernel_size > 0,
              "Conv2d: expected positive in_channels, out_channels and kernel_size, got ",
              in_channels, ", ", out_channels, " and ", kernel_size);
  GROVE_CHECK(stride > 0 && padding >= 0, "Conv2d: expected stride > 0 and padding >= 0, got ",
              "stride ", stride, " and padding ", padding);
  const Tensor weight =
      register_parameter("weight", empty({out_channels, in_channels, kernel_size, kernel_size}));
  init::kaiming_uniform_(weight, std::sqrt(5.0));  // = U(-1/sqrt(fan_in), 1/sqrt(fan_in))
  if (bias) {
    const double bound = init::bias_bound(init::fan_in(weight));
    init::uniform_(register_parameter("bias", empty({out_channels})), -bound, bound);
  }
}

Tensor Conv2d::forward(const Tensor& input) {
  GROVE_CHECK(input.dim() == 4 && input.size(1) == in_channels_, "Conv2d: expected an input of ",
              "shape (N, ", in_channels_, ", H, W), got ", input.sizes());
  // (N, C_in, H, W) -> (N, C_out, Ho, Wo)
  return ops::conv2d(input, weight(), bias(), {stride_, stride_}, {padding_, padding_});
}

std::string Conv2d::extra_repr() const {
  std::string out = std::to_string(in_channels_) + ", " + std::to_string(out_channels_) +
                    ", kernel_size=" + std::to_string(kernel_size_) +
                    ", stride=" + std::to_string(stride_);
  if (padding_ != 0) out += ", padding=" + std::to_string(padding_);
  if (!has_bias_) out += ", bias=false";
  return out;
}

}  // namespace grove::nn
