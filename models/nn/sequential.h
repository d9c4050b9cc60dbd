// nn::Sequential: modules applied one after the other, registered as children "0", "1", ...
// (so their parameters are named "0.weight", "blocks.2.ln1.bias", ...), PyTorch's
// nn.Sequential; it also serves as a ModuleList whose items are called in order.
//
// Not a graph: each child takes and returns one tensor. Holds its children by shared_ptr.
// Contract: as nn::Module (not thread-safe).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "models/nn/module.h"

namespace grove::nn {

class Sequential : public Module {
 public:
  Sequential() : Module("Sequential") {}
  explicit Sequential(std::vector<std::shared_ptr<Module>> modules);

  // Appends a module as the next child (named by its position).
  void push_back(std::shared_ptr<Module> module);
  std::size_t size() const { return modules_.size(); }
  bool empty() const { return modules_.empty(); }
  // The index-th child; index < size().
  const std::shared_ptr<Module>& operator[](std::size_t index) const;

  // Each child's forward on the previous one's output; an empty Sequential returns its input.
  Tensor forward(const Tensor& input) override;

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};

}  // namespace grove::nn
