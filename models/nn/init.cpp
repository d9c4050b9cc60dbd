// Parameter initialisers; see init.h. Each draws through ops::uniform_ / ops::normal_, so the
// numbers equal those of ops::rand / ops::randn after the same seed.
#include "models/nn/init.h"

#include <cmath>

#include "autograd/grad_mode.h"
#include "core/error.h"
#include "ops/inplace.h"

namespace grove::nn::init {

void uniform_(const Tensor& x, double low, double high, Generator* generator) {
  const autograd::NoGradGuard no_grad;
  ops::uniform_(x, low, high, generator);
}

void normal_(const Tensor& x, double mean, double std, Generator* generator) {
  const autograd::NoGradGuard no_grad;
  ops::normal_(x, mean, std, generator);
}

void zeros_(const Tensor& x) {
  const autograd::NoGradGuard no_grad;
  ops::fill_(x, 0.0);
}

void ones_(const Tensor& x) {
  const autograd::NoGradGuard no_grad;
  ops::fill_(x, 1.0);
}

std::int64_t fan_in(const Tensor& weight) {
  GROVE_CHECK(weight.dim() >= 2, "fan_in: expected a weight with at least 2 dims (out, in, ...), ",
              "got shape ", weight.sizes());
  std::int64_t fan = weight.size(1);
  for (std::int64_t dim = 2; dim < weight.dim(); ++dim) fan *= weight.size(dim);
  return fan;
}

void kaiming_uniform_(const Tensor& weight, double a, Generator* generator) {
  const std::int64_t fan = fan_in(weight);
  GROVE_CHECK(fan > 0, "kaiming_uniform_: expected a weight with a positive fan-in, got shape ",
              weight.sizes(), "; a layer with no inputs has nothing to scale by");
  const double gain = std::sqrt(2.0 / (1.0 + a * a));
  const double bound = gain * std::sqrt(3.0 / static_cast<double>(fan));
  uniform_(weight, -bound, bound, generator);
}

double bias_bound(std::int64_t fan_in) {
  return fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
}

}  // namespace grove::nn::init
