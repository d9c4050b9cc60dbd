// OpNode: the backward node of one dispatched op, driven by the op's derivative rule.
//
// It keeps the op's kind and attributes, the tensors the rule asked to save (with their
// versions), and each input's shape, dtype and device. apply() unpacks the saved tensors
// (throwing if one was modified in place, or freed by an earlier backward), runs the rule,
// and conforms each gradient to its input: sums broadcast dims away and checks the dtype.
#pragma once

#include <vector>

#include "autograd/derivatives.h"
#include "autograd/saved_tensor.h"

namespace grove::autograd {

class OpNode final : public Node {
 public:
  OpNode(const DerivativeRule& rule, const ops::OpAttributes& attributes,
         std::vector<Edge> next_edges, std::vector<TensorMeta> inputs);

  std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) override;
  std::string name() const override;
  void release_saved() override;

  void save_input(std::size_t i, const Tensor& tensor);
  void save_output(std::size_t i, const Tensor& tensor);

 private:
  const DerivativeRule& rule_;
  ops::OpAttributes attributes_;
  std::vector<TensorMeta> inputs_;
  std::vector<SavedTensor> saved_inputs_;
  std::vector<SavedTensor> saved_outputs_;
  bool saves_anything_ = false;
  bool released_ = false;
};

// "MulBackward", "CrossEntropyBackward", "AddInplaceBackward" (for add_).
std::string backward_name(ops::OpKind kind);

}  // namespace grove::autograd
