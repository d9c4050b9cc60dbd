// SGD: option checks, velocity buffers, and the per-parameter fused update.
#include "models/optim/sgd.h"

#include <cmath>

#include "core/error.h"
#include "ops/optim.h"

namespace grove::optim {
namespace {

const SgdOptions& checked(const SgdOptions& options) {
  GROVE_CHECK(std::isfinite(options.momentum) && options.momentum >= 0,
              "SGD: expected momentum finite and >= 0, but got ", options.momentum);
  GROVE_CHECK(std::isfinite(options.weight_decay) && options.weight_decay >= 0,
              "SGD: expected weight_decay finite and >= 0, but got ", options.weight_decay);
  GROVE_CHECK(!options.nesterov || options.momentum > 0,
              "SGD: nesterov needs momentum > 0, but momentum is ", options.momentum,
              "; set a momentum (e.g. 0.9) or turn nesterov off");
  return options;
}

}  // namespace

SGD::SGD(std::vector<Tensor> params, SgdOptions options)
    : Optimizer(std::move(params), options.lr), options_(checked(options)) {
  velocity_.resize(this->params().size());
  if (options_.momentum == 0) return;
  for (std::size_t i = 0; i < velocity_.size(); ++i) {
    velocity_[i] = zeros_like(this->params()[i]);
    register_buffer("velocity", i, velocity_[i]);
  }
}

void SGD::update(std::size_t index, const Tensor& param, const Tensor& grad) {
  const ops::SgdOptions fused{.lr = options_.lr,  // ignored: the rate comes from lr_tensor()
                              .momentum = options_.momentum,
                              .weight_decay = options_.weight_decay,
                              .nesterov = options_.nesterov};
  ops::sgd_(param, grad, velocity_[index], lr_tensor(), fused);
}

}  // namespace grove::optim
