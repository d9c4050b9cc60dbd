// DerivedNode: gradients of views and copies.
#include "autograd/derived_node.h"

#include "autograd/derivatives.h"
#include "core/error.h"
#include "ops/inplace.h"

namespace grove::autograd {
namespace {

std::vector<Edge> one_edge(Edge edge) {
  std::vector<Edge> edges;
  edges.push_back(std::move(edge));
  return edges;
}

}  // namespace

// The view of `whole` (the source's sizes) that a slice's or select's gradient `grad` fills;
// undefined for an empty slice.
Tensor DerivedNode::view_of_grad(const Tensor& whole, const Tensor& grad) const {
  if (kind_ == DerivedKind::Select) return whole.select(args_[0], args_[1]);  // dim, index
  const std::int64_t dim = args_[0];  // Slice: dim, start, step
  const std::int64_t start = args_[1];
  const std::int64_t step = args_[2];
  if (grad.size(dim) == 0) return Tensor();
  return whole.slice(dim, start, start + (grad.size(dim) - 1) * step + 1, step);
}

DerivedNode::DerivedNode(DerivedKind kind, IntArrayRef args, TensorMeta source, Edge source_edge)
    : Node(1, one_edge(std::move(source_edge))),
      kind_(kind),
      args_(args),
      source_(std::move(source)) {}

std::string DerivedNode::name() const {
  switch (kind_) {
    case DerivedKind::Reshape:
      return "ViewBackward";
    case DerivedKind::Permute:
      return "PermuteBackward";
    case DerivedKind::Slice:
      return "SliceBackward";
    case DerivedKind::Select:
      return "SelectBackward";
    case DerivedKind::Expand:
      return "ExpandBackward";
    case DerivedKind::AsStrided:
      return "AsStridedBackward";
    case DerivedKind::Copy:
      return "CopyBackward";
  }
  return "DerivedBackward";
}

std::vector<Tensor> DerivedNode::apply(std::vector<Tensor>&& grad_outputs) {
  std::vector<Tensor> grads(1);
  const Tensor& grad = grad_outputs[0];
  if (!grad.defined()) return grads;
  const TensorOptions options = TensorOptions(source_.dtype).device(source_.device);
  switch (kind_) {
    case DerivedKind::Reshape:
      grads[0] = grad.reshape(source_.sizes);
      break;
    case DerivedKind::Permute: {
      DimVector inverse(args_.size());
      for (std::size_t i = 0; i < args_.size(); ++i) {
        inverse[static_cast<std::size_t>(args_[i])] = static_cast<std::int64_t>(i);
      }
      grads[0] = grad.permute(inverse);
      break;
    }
    case DerivedKind::Slice:
    case DerivedKind::Select: {
      Tensor result = zeros(source_.sizes, options);
      const Tensor view = view_of_grad(result, grad);
      if (view.defined()) ops::copy_(view, grad);
      grads[0] = result;
      break;
    }
    case DerivedKind::Expand:
      grads[0] = sum_to(grad, source_.sizes);
      break;
    case DerivedKind::AsStrided:
      GROVE_INTERNAL_ASSERT(false, "as_strided views are refused when recorded");
      break;
    case DerivedKind::Copy:
      grads[0] = grad.to(source_.dtype).to(source_.device);
      break;
  }
  return grads;
}

bool DerivedNode::add_into(Tensor& slot, const std::vector<Tensor>& grad_outputs) {
  const Tensor& grad = grad_outputs[0];
  if (!grad.defined() || slot.sizes() != source_.sizes || slot.dtype() != grad.dtype() ||
      slot.device() != grad.device()) {
    return false;
  }
  if (kind_ != DerivedKind::Slice && kind_ != DerivedKind::Select) return false;
  const Tensor view = view_of_grad(slot, grad);
  if (view.defined()) ops::add_(view, grad);
  return true;
}

}  // namespace grove::autograd
