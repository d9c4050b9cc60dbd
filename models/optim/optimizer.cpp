// Optimizer: parameter checks, the learning rate and step tensors, zero_grad, the step loop and
// named state. See Note [Optimizer state lives on the device] in optimizer.h.
#include "models/optim/optimizer.h"

#include <cmath>
#include <map>
#include <set>

#include "autograd/grad_mode.h"
#include "core/error.h"
#include "ops/inplace.h"

namespace grove::optim {
namespace {

void check_params(const std::vector<Tensor>& params) {
  GROVE_CHECK(!params.empty(),
              "expected at least one parameter to optimize, but got an empty list; pass the "
              "model's parameters()");
  std::map<const TensorImpl*, std::size_t> seen;  // each parameter's first index
  for (std::size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    GROVE_CHECK(p.defined(), "expected parameter ", i,
                " to be a defined tensor, but it is undefined");
    GROVE_CHECK(p.dtype() == DType::Float32 || p.dtype() == DType::Float64, "expected parameter ",
                i, " to be float32 or float64, but got ", p.dtype(), p.sizes());
    GROVE_CHECK(p.requires_grad() && p.is_leaf(), "expected parameter ", i,
                " to be a leaf that requires grad, but got a ",
                p.requires_grad() ? "non-leaf (the output of an op)" : "tensor without grad",
                " of shape ", p.sizes(), "; pass the tensors you called requires_grad_() on");
    GROVE_CHECK(p.device() == params.front().device(), "expected every parameter on ",
                params.front().device(), " (the device of parameter 0), but parameter ", i,
                " is on ", p.device(), "; move the model to one device first");
    const auto [first, inserted] = seen.emplace(p.impl(), i);
    GROVE_CHECK(inserted, "expected each parameter once, but parameter ", i,
                " is the same tensor as parameter ", first->second,
                "; pass each parameter once (parameters() of a model lists each once)");
  }
}

void check_lr(double lr) {
  GROVE_CHECK(std::isfinite(lr) && lr >= 0, "expected a learning rate that is finite and >= 0, ",
              "but got ", lr);
}

}  // namespace

Optimizer::Optimizer(std::vector<Tensor> params, double lr) : params_(std::move(params)) {
  check_params(params_);
  check_lr(lr);
  const Device where = params_.front().device();
  lr_ = lr;
  lr_tensor_ = full({}, lr, TensorOptions(DType::Float32).device(where));
  step_ = zeros({}, TensorOptions(DType::Int64).device(where));
  one_ = ones({}, TensorOptions(DType::Int64).device(where));
}

void Optimizer::set_lr(double lr) {
  check_lr(lr);
  lr_tensor_.fill_(lr);
  lr_ = lr;
}

void Optimizer::zero_grad(bool set_to_none) {
  for (const Tensor& p : params_) {
    if (set_to_none) {
      p.set_grad(Tensor());
    } else if (const Tensor grad = p.grad(); grad.defined()) {
      grad.zero_();
    }
  }
}

void Optimizer::step(const Tensor& found_inf) {
  const autograd::NoGradGuard no_grad;
  ops::add_(step_, one_);
  // A skipped step does not count: the flag (0 or 1) is taken back on the device.
  if (found_inf.defined()) ops::add_(step_, found_inf.reshape({}).to(DType::Int64), -1);
  // One update per dtype: the fused updates take parameters of one dtype.
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    std::vector<std::size_t> indices;
    std::vector<Tensor> grads;
    for (std::size_t i = 0; i < params_.size(); ++i) {
      if (params_[i].dtype() != dtype) continue;
      Tensor grad = params_[i].grad();
      // A parameter nothing but this optimizer holds, without a gradient: its module replaced
      // it (Module::to makes new tensors), so every step would skip it, and the model's real
      // parameters would never be trained.
      GROVE_CHECK(grad.defined() || params_[i].impl()->strong_count() > 1,
                  "optimizer step: parameter ", i, " (", dtype, params_[i].sizes(), " on ",
                  params_[i].device(),
                  ") is held by nothing but this optimizer and has no gradient: the module it "
                  "came from replaced it, most likely by model.to(...) after the optimizer was "
                  "made. Make the optimizer after moving the model (model.to(device), then the "
                  "optimizer over model.parameters())");
      if (!grad.defined()) continue;
      indices.push_back(i);
      grads.push_back(std::move(grad));
    }
    if (!indices.empty()) update(indices, grads, found_inf);
  }
}

void Optimizer::register_buffer(const std::string& name, std::size_t index, Tensor buffer) {
  GROVE_INTERNAL_ASSERT(index < params_.size() && buffer.defined());
  buffers_.emplace_back(name + "." + std::to_string(index), std::move(buffer));
}

Optimizer::NamedState Optimizer::state() const {
  NamedState all;
  all.reserve(buffers_.size() + 2);
  all.emplace_back("lr", lr_tensor_);
  all.emplace_back("step", step_);
  all.insert(all.end(), buffers_.begin(), buffers_.end());
  return all;
}

void Optimizer::load_state(const NamedState& state) {
  const NamedState expected = this->state();
  std::map<std::string, Tensor> given;
  for (const auto& [name, tensor] : state) {
    GROVE_CHECK(given.emplace(name, tensor).second, "load_state: the entry '", name,
                "' is given twice; each state entry must appear once");
  }
  std::set<std::string> expected_names;
  for (const auto& [name, target] : expected) {
    expected_names.insert(name);
    const auto found = given.find(name);
    GROVE_CHECK(found != given.end(), "load_state: the entry '", name,
                "' is missing; expected every entry of state() (", expected.size(),
                " entries); was the state saved from an optimizer of another kind, options or "
                "parameter list?");
    const Tensor& source = found->second;
    GROVE_CHECK(source.defined(), "load_state: the entry '", name, "' is an undefined tensor");
    GROVE_CHECK(source.sizes() == target.sizes(), "load_state: expected the entry '", name,
                "' to have sizes ", target.sizes(), ", but got ", source.sizes(),
                "; the parameter list differs from the one the state was saved with");
  }
  for (const auto& [name, tensor] : state) {
    GROVE_CHECK(expected_names.count(name) == 1, "load_state: unexpected entry '", name,
                "'; this optimizer's state has no such entry (momentum off, fewer parameters, "
                "or another optimizer?)");
  }
  // Host reads of the scalars, checked before anything is copied.
  const double lr = given.at("lr").item<double>();
  check_lr(lr);
  const double step = given.at("step").item<double>();
  GROVE_CHECK(std::isfinite(step) && step >= 0 && step == std::floor(step),
              "load_state: expected 'step' to hold a whole number >= 0, but got ", step);
  for (const auto& [name, target] : expected) target.copy_(given.at(name));
  lr_ = lr;
}

}  // namespace grove::optim
