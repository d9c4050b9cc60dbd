// The autograd methods of Tensor (declared in core/tensor.h) and the hook functions.
#include "autograd/accumulate_grad.h"
#include "autograd/autograd.h"
#include "autograd/autograd_meta.h"
#include "autograd/grad_writes.h"
#include "core/error.h"

namespace grove {

Tensor Tensor::grad() const {
  const autograd::AutogradMeta* meta = autograd::meta_of(*this);
  return meta != nullptr ? meta->grad : Tensor();
}

void Tensor::set_grad(const Tensor& grad) const {
  GROVE_CHECK(!grad.defined() ||
                  (grad.sizes() == sizes() && grad.dtype() == dtype() && grad.device() == device()),
              "set_grad: the gradient must match the tensor (", dtype(), sizes(), " on ", device(),
              "), but got ", grad.dtype(), grad.sizes(), " on ", grad.device());
  GROVE_CHECK(!grad.defined() || !has_internal_overlap(grad.sizes(), grad.strides()),
              "set_grad: the gradient is an expanded view (strides ", grad.strides(),
              "); later backward calls add into it in place, so pass a tensor whose elements "
              "have their own memory (clone() it)");
  autograd::note_grad_write(*this);
  if (!grad.defined() && autograd::meta_of(*this) == nullptr) return;
  autograd::ensure_meta(*this).grad = grad;
}

void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  autograd::backward({*this}, {gradient}, retain_graph);
}

void Tensor::retain_grad() const {
  GROVE_CHECK(requires_grad(), "retain_grad: the tensor (", dtype(), sizes(),
              ") does not require gradients");
  autograd::check_view_is_current(*this, "retain_grad");
  if (is_leaf()) return;  // leaves keep their gradient anyway
  autograd::AutogradMeta& meta = autograd::ensure_meta(*this);
  if (meta.retains_grad) return;
  meta.retains_grad = true;
  meta.grad_fn->set_retain_hook(meta.output_nr, autograd::retain_grad_hook(*this));
}

namespace autograd {

NodePtr grad_fn(const Tensor& tensor) {
  const AutogradMeta* meta = meta_of(tensor);
  return meta != nullptr ? meta->grad_fn : NodePtr();
}

GradHook retain_grad_hook(const Tensor& tensor) {
  // The hook holds the tensor's impl weakly: the graph must not keep the tensor alive.
  const WeakIntrusivePtr<TensorImpl> weak{IntrusivePtr<TensorImpl>(tensor.impl())};
  return [weak](const Tensor& grad) {
    if (IntrusivePtr<TensorImpl> alive = weak.lock()) {
      accumulate_into(Tensor(std::move(alive)), grad.clone());
    }
    return Tensor();
  };
}

void register_hook(const Tensor& tensor, GradHook hook) {
  GROVE_CHECK(tensor.requires_grad(), "register_hook: the tensor (", tensor.dtype(), tensor.sizes(),
              ") does not require gradients, so it has none to hook");
  check_view_is_current(tensor, "register_hook");
  AutogradMeta& meta = ensure_meta(tensor);
  if (meta.grad_fn) {
    meta.grad_fn->add_pre_hook(meta.output_nr, std::move(hook));
  } else {
    meta.leaf_hooks.push_back(std::move(hook));
  }
}

void register_post_accumulate_grad_hook(const Tensor& leaf,
                                        std::function<void(const Tensor& leaf)> hook) {
  GROVE_CHECK(leaf.requires_grad() && leaf.is_leaf(),
              "register_post_accumulate_grad_hook: expected a leaf that requires gradients");
  ensure_meta(leaf).post_accumulate_hooks.push_back(std::move(hook));
}

}  // namespace autograd
}  // namespace grove
