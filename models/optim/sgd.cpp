// SGD: option checks, velocity buffers, and the fused update of all parameters.
#include "models/optim/sgd.h"

#include <cmath>
#include <vector>

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

void SGD::update(std::span<const std::size_t> indices, std::span<const Tensor> grads,
                 const Tensor& found_inf) {
  const ops::SgdHyperparameters fused{
      .lr = options_.lr,  // ignored: the rate comes from lr_tensor()
      .momentum = options_.momentum,
      .weight_decay = options_.weight_decay,
      .nesterov = options_.nesterov};
  std::vector<Tensor> params;
  std::vector<Tensor> velocities;
  for (const std::size_t i : indices) {
    params.push_back(this->params()[i]);
    if (options_.momentum != 0) velocities.push_back(velocity_[i]);
  }
  ops::sgd_(params, grads, velocities, lr_tensor(), fused, found_inf);
}

}  // namespace grove::optim
