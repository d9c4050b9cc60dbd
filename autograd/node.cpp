// Node: sequence numbers and tensor hooks.
#include "autograd/node.h"

#include "core/error.h"

namespace grove::autograd {
namespace {
thread_local std::uint64_t next_sequence_nr = 0;
}  // namespace

Node::Node(std::uint32_t num_outputs, std::vector<Edge> next_edges)
    : Node(num_outputs, std::move(next_edges), next_sequence_nr++) {}

Node::Node(std::uint32_t num_outputs, std::vector<Edge> next_edges, std::uint64_t sequence_nr)
    : next_edges_(std::move(next_edges)), num_outputs_(num_outputs), sequence_nr_(sequence_nr) {}

void Node::release_resources() {
  // Tear the graph down iteratively: take the edges of every node this one held the last
  // handle to, so that no destructor ever destroys another node that still has edges.
  std::vector<NodePtr> doomed;
  for (Edge& edge : next_edges_) {
    if (edge.node) doomed.push_back(std::move(edge.node));
  }
  next_edges_.clear();
  pre_hooks_.clear();
  retain_hooks_.clear();
  while (!doomed.empty()) {
    NodePtr node = std::move(doomed.back());
    doomed.pop_back();
    if (node.use_count() != 1) continue;  // someone else keeps it (and its edges) alive
    for (Edge& edge : node->next_edges_) {
      if (edge.node) doomed.push_back(std::move(edge.node));
    }
    node->next_edges_.clear();
  }  // each popped node dies here with no edges left
}

void Node::add_pre_hook(std::uint32_t output_nr, GradHook hook) {
  GROVE_INTERNAL_ASSERT(output_nr < num_outputs_, "hook on output ", output_nr, " of ", name(),
                        ", which has ", num_outputs_, " outputs");
  pre_hooks_.emplace_back(output_nr, std::move(hook));
}

void apply_grad_hook(const GradHook& hook, Tensor& grad) {
  if (!grad.defined()) return;  // no gradient reached this tensor
  Tensor replaced = hook(grad);
  if (!replaced.defined()) return;  // the hook only looked
  GROVE_CHECK(replaced.sizes() == grad.sizes() && replaced.dtype() == grad.dtype(),
              "a tensor hook must return a gradient of the same shape and dtype as it got (",
              grad.dtype(), grad.sizes(), "), but returned ", replaced.dtype(), replaced.sizes());
  grad = std::move(replaced);
}

void Node::run_pre_hooks(std::vector<Tensor>& grads) {
  for (auto& [output_nr, hook] : pre_hooks_) apply_grad_hook(hook, grads[output_nr]);
  for (auto& [output_nr, hook] : retain_hooks_) apply_grad_hook(hook, grads[output_nr]);
}

void Node::set_retain_hook(std::uint32_t output_nr, GradHook hook) {
  GROVE_INTERNAL_ASSERT(output_nr < num_outputs_, "retain hook on output ", output_nr);
  retain_hooks_.emplace_back(output_nr, std::move(hook));
}

GradHook Node::take_retain_hook(std::uint32_t output_nr) {
  for (auto it = retain_hooks_.begin(); it != retain_hooks_.end(); ++it) {
    if (it->first != output_nr) continue;
    GradHook hook = std::move(it->second);
    retain_hooks_.erase(it);
    return hook;
  }
  return {};
}

}  // namespace grove::autograd
