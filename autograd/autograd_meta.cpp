// AutogradMeta helpers: history, gradient edges and leaf accumulators.
#include "autograd/autograd_meta.h"

#include <mutex>
#include <sstream>

#include "autograd/accumulate_grad.h"
#include "core/error.h"

namespace grove::autograd {

// A leaf may be shared by graphs on several threads, whose first backward ops may all find it
// without autograd data at once: the data is made under one lock and checked for again inside
// it, so one thread never replaces (and frees) what another has just made and is using. The
// check before the lock only skips it once the data exists; it is never removed while the
// tensor has a strong handle.
// See Note [Autograd metadata is published once] in core/tensor_impl.h.
AutogradMeta& ensure_meta(const Tensor& tensor) {
  if (AutogradMeta* meta = meta_of(tensor)) return *meta;
  return *static_cast<AutogradMeta*>(
      tensor.install_autograd_meta(std::make_unique<AutogradMeta>()));
}

void set_history(const Tensor& tensor, NodePtr node, std::uint32_t output_nr) {
  AutogradMeta& meta = ensure_meta(tensor);
  meta.grad_fn = std::move(node);
  meta.output_nr = output_nr;
  tensor.impl()->set_requires_grad(true);
}

Edge gradient_edge(const Tensor& tensor) {
  if (const AutogradMeta* meta = meta_of(tensor); meta != nullptr && meta->grad_fn) {
    return {meta->grad_fn, meta->output_nr};
  }
  if (tensor.requires_grad()) return {grad_accumulator(tensor), 0};
  return {};
}

NodePtr grad_accumulator(const Tensor& leaf) {
  AutogradMeta& meta = ensure_meta(leaf);
  GROVE_INTERNAL_ASSERT(!meta.grad_fn, "grad_accumulator of a non-leaf tensor");
  const std::lock_guard lock(meta.mutex);
  if (NodePtr existing = meta.grad_accumulator.lock()) return existing;
  NodePtr made = IntrusivePtr<AccumulateGrad>::make(leaf);
  meta.grad_accumulator = WeakIntrusivePtr<Node>(made);
  return made;
}

std::string describe(const Tensor& tensor) {
  std::ostringstream out;
  out << tensor.dtype() << tensor.sizes();
  return out.str();
}

void check_view_is_current(const Tensor& tensor, std::string_view op) {
  const AutogradMeta* meta = meta_of(tensor);
  if (meta == nullptr || !meta->is_view || meta->view_version == tensor.version()) return;
  GROVE_CHECK(false, op, ": a tensor (", tensor.dtype(), tensor.sizes(),
              ") is a view of a tensor that was modified in place after the view was made "
              "(version ",
              meta->view_version, " then, ", tensor.version(),
              " now), so its gradient history no longer matches its values. Take the view "
              "again after the in-place change");
}

}  // namespace grove::autograd
