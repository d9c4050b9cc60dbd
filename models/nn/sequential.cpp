// nn::Sequential; see sequential.h.
#include "models/nn/sequential.h"

#include <string>

#include "core/error.h"

namespace grove::nn {

Sequential::Sequential(std::vector<std::shared_ptr<Module>> modules) : Module("Sequential") {
  for (auto& module : modules) push_back(std::move(module));
}

void Sequential::push_back(std::shared_ptr<Module> module) {
  modules_.push_back(register_module(std::to_string(modules_.size()), std::move(module)));
}

const std::shared_ptr<Module>& Sequential::operator[](std::size_t index) const {
  GROVE_CHECK(index < modules_.size(), "Sequential: expected an index below ", modules_.size(),
              ", got ", index);
  return modules_[index];
}

Tensor Sequential::forward(const Tensor& input) {
  Tensor x = input;
  for (const auto& module : modules_) x = module->forward(x);
  return x;
}

}  // namespace grove::nn
