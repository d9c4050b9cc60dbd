// AutogradMeta: what autograd keeps on a tensor (in TensorImpl's opaque autograd slot).
//
// Leaves (tensors made by the user, not by a recorded op) have no grad_fn; if they require
// gradients, backward() accumulates into `grad` through their AccumulateGrad node, which is
// made on first use and shared by every graph that reads the leaf. The meta holds it weakly
// (the graphs hold it strongly), so a leaf does not keep a dead graph's node alive.
//
// Outputs of recorded ops (and views of tensors with history) have a grad_fn and the index
// of the node's forward output they are (output_nr); their requires_grad flag is set.
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "autograd/node.h"

namespace grove::autograd {

struct AutogradMeta final : AutogradMetaInterface {
  NodePtr grad_fn;
  std::uint32_t output_nr = 0;
  Tensor grad;                              // leaves (and non-leaves with retain_grad)
  WeakIntrusivePtr<Node> grad_accumulator;  // leaves only
  std::vector<GradHook> leaf_hooks;         // run on a leaf's gradient before accumulation
  std::vector<std::function<void(const Tensor&)>> post_accumulate_hooks;
  std::mutex mutex;  // guards grad and grad_accumulator: graphs on other threads may share a leaf
  bool is_view = false;  // made by a core view (slice, transpose, ...) of a tensor with history
  std::uint64_t view_version = 0;  // views: the storage's version when the view was made
  bool retains_grad = false;
  bool made_without_grad = false;  // a view of a tensor requiring grad, made under NoGradGuard

  bool is_leaf() const override { return !grad_fn; }
};

// The tensor's meta, or null if it has none.
inline AutogradMeta* meta_of(const Tensor& tensor) {
  return static_cast<AutogradMeta*>(tensor.autograd_meta());
}
// The tensor's meta, made if missing.
AutogradMeta& ensure_meta(const Tensor& tensor);

// Makes `tensor` the forward output `output_nr` of `node` and marks it as requiring gradients.
void set_history(const Tensor& tensor, NodePtr node, std::uint32_t output_nr);

// Where the gradient of `tensor` goes: (grad_fn, output_nr) for an op output, the leaf's
// AccumulateGrad node for a leaf that requires gradients, or an invalid edge.
Edge gradient_edge(const Tensor& tensor);

// A leaf's AccumulateGrad node, made if it does not exist.
NodePtr grad_accumulator(const Tensor& leaf);

// Throws if `tensor` is a view whose base changed in place after the view was made (its
// history no longer matches its values); `op` names the caller. See recorder.cpp.
void check_view_is_current(const Tensor& tensor, std::string_view op);

// "float32[2, 3]": a tensor's dtype and shape, for messages.
std::string describe(const Tensor& tensor);

// The hook retain_grad() puts on a node: accumulates the gradient into the tensor's grad().
GradHook retain_grad_hook(const Tensor& tensor);

}  // namespace grove::autograd
