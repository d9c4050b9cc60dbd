// AccumulateGrad: storing and summing leaf gradients.
#include "autograd/accumulate_grad.h"

#include <limits>

#include "autograd/autograd_meta.h"
#include "autograd/grad_mode.h"
#include "autograd/grad_writes.h"
#include "core/error.h"
#include "ops/inplace.h"

namespace grove::autograd {
namespace {

// True if nothing but `grad` itself refers to its memory, so it can become a leaf's grad()
// without a copy (a grad() that aliased another tensor would change with it), and that memory
// is not lent by a graph pool for one step (Note [Memory lent by a graph pool]).
bool owns_its_memory(const Tensor& grad) {
  if (grad.storage()->is_lent()) return false;
  // ... and covers its whole storage: a slice of a bigger gradient (cat's backward hands out
  // slices) would keep all of it alive.
  return grad.impl()->strong_count() == 1 && grad.storage().use_count() == 1 &&
         grad.is_contiguous() && grad.storage_offset() == 0 &&
         grad.storage()->nbytes() == grad.nbytes();
}

}  // namespace

// Accumulation runs first among the ready nodes (the largest sequence number), so a leaf's
// gradient is final, and its memory counted once, as early as possible.
AccumulateGrad::AccumulateGrad(Tensor leaf)
    : Node(1, {}, std::numeric_limits<std::uint64_t>::max()), leaf_(std::move(leaf)) {}

void AccumulateGrad::release_resources() {
  leaf_ = Tensor();
  Node::release_resources();
}

void AccumulateGrad::run_pre_hooks(std::vector<Tensor>& grads) {
  Node::run_pre_hooks(grads);
  if (const AutogradMeta* meta = meta_of(leaf_)) {
    for (const GradHook& hook : meta->leaf_hooks) apply_grad_hook(hook, grads[0]);
  }
}

std::vector<Tensor> AccumulateGrad::apply(std::vector<Tensor>&& grad_outputs) {
  GROVE_INTERNAL_ASSERT(grad_outputs.size() == 1, "AccumulateGrad takes one gradient");
  if (!grad_outputs[0].defined()) return {};  // no gradient reached the leaf
  accumulate_into(leaf_, std::move(grad_outputs[0]));
  if (const AutogradMeta* meta = meta_of(leaf_)) {
    for (const auto& hook : meta->post_accumulate_hooks) hook(leaf_);
  }
  return {};
}

void accumulate_into(const Tensor& leaf, Tensor&& grad) {
  note_grad_write(leaf);
  AutogradMeta& meta = ensure_meta(leaf);
  GROVE_INTERNAL_ASSERT(grad.sizes() == leaf.sizes() && grad.dtype() == leaf.dtype(), "gradient ",
                        grad.dtype(), grad.sizes(), " for a tensor ", leaf.dtype(), leaf.sizes());
  const NoGradGuard no_grad;
  const std::lock_guard lock(meta.mutex);  // graphs on two threads may share a leaf
  if (!meta.grad.defined()) {
    meta.grad = owns_its_memory(grad) ? std::move(grad) : grad.clone();
  } else {
    ops::add_(meta.grad, grad);
  }
}

}  // namespace grove::autograd
