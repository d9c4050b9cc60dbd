// AdamW: option checks, the moment buffers, and the fused update of all parameters.
#include "models/optim/adamw.h"

#include <cmath>
#include <vector>

#include "core/error.h"
#include "ops/optim.h"

namespace grove::optim {
namespace {

void check_beta(const char* name, double beta) {
  GROVE_CHECK(std::isfinite(beta) && beta >= 0 && beta < 1, "AdamW: expected ", name,
              " in [0, 1), but got ", beta, "; PyTorch's defaults are 0.9 and 0.999");
}

const AdamwOptions& checked(const AdamwOptions& options) {
  check_beta("beta1", options.beta1);
  check_beta("beta2", options.beta2);
  GROVE_CHECK(std::isfinite(options.eps) && options.eps > 0,
              "AdamW: expected eps finite and > 0, but got ", options.eps,
              "; it keeps the update finite where the second moment is 0 (default 1e-8)");
  GROVE_CHECK(std::isfinite(options.weight_decay) && options.weight_decay >= 0,
              "AdamW: expected weight_decay finite and >= 0, but got ", options.weight_decay);
  return options;
}

}  // namespace

AdamW::AdamW(std::vector<Tensor> params, AdamwOptions options)
    : Optimizer(std::move(params), options.lr), options_(checked(options)) {
  for (std::size_t i = 0; i < this->params().size(); ++i) {
    exp_avg_.push_back(zeros_like(this->params()[i]));
    exp_avg_sq_.push_back(zeros_like(this->params()[i]));
    register_buffer("exp_avg", i, exp_avg_.back());
    register_buffer("exp_avg_sq", i, exp_avg_sq_.back());
  }
}

void AdamW::update(std::span<const std::size_t> indices, std::span<const Tensor> grads,
                   const Tensor& found_inf) {
  const ops::AdamwHyperparameters fused{
      .lr = options_.lr,  // ignored: the rate comes from lr_tensor()
      .beta1 = options_.beta1,
      .beta2 = options_.beta2,
      .eps = options_.eps,
      .weight_decay = options_.weight_decay};
  std::vector<Tensor> params;
  std::vector<Tensor> exp_avgs;
  std::vector<Tensor> exp_avg_sqs;
  for (const std::size_t i : indices) {
    params.push_back(this->params()[i]);
    exp_avgs.push_back(exp_avg_[i]);
    exp_avg_sqs.push_back(exp_avg_sq_[i]);
  }
  ops::adamw_(params, grads, exp_avgs, exp_avg_sqs, step_tensor(), lr_tensor(), fused, found_inf);
}

}  // namespace grove::optim
