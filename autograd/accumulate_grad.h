// AccumulateGrad: the node at the end of every path, which adds a gradient into a leaf's grad().
//
// The first gradient is stored without a copy when nothing else holds it (the engine moves
// gradients along, so a freshly computed one usually qualifies); otherwise it is cloned, so a
// leaf's grad() never aliases another tensor. Later gradients are added in place, so an
// optimizer holding grad() sees the sum.
#pragma once

#include "autograd/node.h"

namespace grove::autograd {

class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(Tensor leaf);

  std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) override;
  std::string name() const override { return "AccumulateGrad"; }
  // The leaf's own hooks (register_hook on a leaf) run here, before accumulation.
  void run_pre_hooks(std::vector<Tensor>& grads) override;

  const Tensor& leaf() const { return leaf_; }

 protected:
  // The leaf's meta holds this node weakly; drop the leaf when the graphs let go of the node,
  // or the two would keep each other alive. See Note [Nodes own nodes only through edges].
  void release_resources() override;

 private:
  Tensor leaf_;
};

// Adds `grad` into `leaf`'s stored gradient (or stores it). Used by AccumulateGrad and by
// retain_grad() on non-leaves.
void accumulate_into(const Tensor& leaf, Tensor&& grad);

}  // namespace grove::autograd
