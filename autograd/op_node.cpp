// OpNode: unpack, run the rule, conform the gradients.
#include "autograd/op_node.h"

#include <cctype>

#include "core/error.h"

namespace grove::autograd {

std::string backward_name(ops::OpKind kind) {
  std::string name;
  bool capitalize = true;
  for (char c : ops::op_name(kind)) {
    if (c == '_') {
      capitalize = true;
      continue;
    }
    name += capitalize ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    capitalize = false;
  }
  if (ops::op_name(kind).ends_with('_')) name += "Inplace";
  return name + "Backward";
}

OpNode::OpNode(const DerivativeRule& rule, const ops::OpAttributes& attributes,
               std::vector<Edge> next_edges, std::vector<TensorMeta> inputs)
    : Node(1, std::move(next_edges)),
      rule_(rule),
      attributes_(attributes),
      inputs_(std::move(inputs)) {}

std::string OpNode::name() const {
  return backward_name(rule_.kind);
}

void OpNode::save_input(std::size_t i, const Tensor& tensor) {
  if (saved_inputs_.size() <= i) saved_inputs_.resize(inputs_.size());
  saved_inputs_[i] = SavedTensor(tensor);
  saves_anything_ = true;
}

void OpNode::save_output(std::size_t i, const Tensor& tensor) {
  if (saved_outputs_.size() <= i) saved_outputs_.resize(i + 1);
  saved_outputs_[i] = SavedTensor(tensor);
  saves_anything_ = true;
}

void OpNode::release_saved() {
  saved_inputs_.clear();
  saved_outputs_.clear();
  released_ = true;
}

std::vector<Tensor> OpNode::apply(std::vector<Tensor>&& grad_outputs) {
  const std::size_t num_inputs = inputs_.size();
  std::vector<Tensor> grads(num_inputs);
  if (grad_outputs.empty() || !grad_outputs[0].defined()) return grads;  // nothing flows back
  GROVE_CHECK(!(released_ && saves_anything_), "autograd: trying to run backward through ", name(),
              " a second time, but the tensors it saved were freed after the first backward. "
              "Pass retain_graph=true to the first backward() (or grad()) to go through the "
              "graph more than once");

  const std::string op(ops::op_name(rule_.kind));
  std::vector<Tensor> saved_inputs(saved_inputs_.size());
  for (std::size_t i = 0; i < saved_inputs_.size(); ++i) {
    if (saved_inputs_[i].defined())
      saved_inputs[i] = saved_inputs_[i].unpack(op, "input " + std::to_string(i));
  }
  std::vector<Tensor> saved_outputs(saved_outputs_.size());
  for (std::size_t i = 0; i < saved_outputs_.size(); ++i) {
    if (saved_outputs_[i].defined())
      saved_outputs[i] = saved_outputs_[i].unpack(op, "output " + std::to_string(i));
  }
  std::vector<std::uint8_t> needs(num_inputs);
  for (std::size_t i = 0; i < num_inputs; ++i) needs[i] = next_edges()[i].valid();
  const BackwardContext ctx{attributes_, saved_inputs,    saved_outputs,
                            inputs_,     grad_outputs[0], needs};
  rule_.backward(ctx, grads);

  for (std::size_t i = 0; i < num_inputs; ++i) {
    Tensor& grad = grads[i];
    if (!grad.defined()) continue;
    if (!needs[i]) {
      grad = Tensor();
      continue;
    }
    const TensorMeta& input = inputs_[i];
    if (grad.sizes() != input.sizes) grad = sum_to(grad, input.sizes);
    GROVE_INTERNAL_ASSERT(grad.dtype() == input.dtype, "the derivative rule of ", op,
                          " returned a ", grad.dtype(), " gradient for input ", i, ", a ",
                          input.dtype, " tensor");
  }
  return grads;
}

}  // namespace grove::autograd
