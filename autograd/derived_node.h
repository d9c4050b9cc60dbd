// DerivedNode: the backward node of a view or copy that core made (not an op).
// See Note [Core observers] in core/core_observer.h.
//
// A view's gradient is the output gradient put back where the view's elements came from:
//   reshape -> reshape back; permute -> inverse permutation; expand -> sum over broadcast
//   dims; slice/select -> zeros of the source's shape with the gradient copied into the
//   slice; copy (clone, contiguous, to) -> the gradient in the source's dtype and device.
// It saves no tensors, only the source's shape, dtype and device.
#pragma once

#include "autograd/node.h"
#include "core/core_observer.h"

namespace grove::autograd {

class DerivedNode final : public Node {
 public:
  DerivedNode(DerivedKind kind, IntArrayRef args, TensorMeta source, Edge source_edge);

  std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) override;
  // Slice and select: the gradient added into the view of `slot` it came from.
  bool add_into(Tensor& slot, const std::vector<Tensor>& grad_outputs) override;
  std::string name() const override;

 private:
  Tensor view_of_grad(const Tensor& whole, const Tensor& grad) const;

  DerivedKind kind_;
  DimVector args_;
  TensorMeta source_;
};

}  // namespace grove::autograd
