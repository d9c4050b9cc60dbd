// The backward engine: dependency counting, a ready queue, gradient buffers.
#include "autograd/engine.h"

#include <queue>
#include <unordered_map>

#include "autograd/autograd_meta.h"
#include "autograd/grad_mode.h"
#include "core/error.h"
#include "ops/autocast.h"
#include "ops/elementwise.h"
#include "ops/inplace.h"

namespace grove::autograd {
namespace {

// A gradient grad() returns to the caller, who may keep it past the step: a copy if a graph
// pool lent its memory (Note [Memory lent by a graph pool] in core/storage.h).
Tensor kept(const Tensor& grad) {
  if (!grad.defined() || !grad.storage()->is_lent()) return grad;
  const NoGradGuard no_grad;
  return grad.clone();
}

struct NodeState {
  int dependencies = 0;        // gradients still to arrive (edges from nodes not yet run)
  std::vector<Tensor> buffer;  // the sums of the gradients that arrived, per forward output
  bool needed = true;          // grad(): some captured input depends on this node
  bool runs = true;            // grad(): some node after this one is needed
  std::vector<std::pair<std::uint32_t, std::size_t>> captures;  // grad(): (output_nr, result)
};

// True if `tensor` is the only handle on its memory, so it can be added to in place.
bool sole_owner(const Tensor& tensor) {
  return tensor.impl()->strong_count() == 1 && tensor.storage().use_count() == 1 &&
         tensor.is_contiguous();
}

// Sums `grad` into `slot` (which takes it if empty). In place when nothing else can see the
// slot's memory; the engine owns the gradients it produced, so this is the common case.
void accumulate(Tensor& slot, Tensor&& grad) {
  if (!slot.defined()) {
    slot = std::move(grad);
  } else if (sole_owner(slot) && slot.sizes() == grad.sizes()) {
    ops::add_(slot, grad);
  } else {
    slot = ops::add(slot, grad);
  }
}

// Note [Adding a view's gradient into the sum]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The gradient of a slice (or select) of x is zero outside the slice: apply() makes it as a
// zero tensor of x's sizes with the slice's gradient copied in. A tensor read through several
// slices (the GPT's q, k and v, three slices of one (B, T, 3C) product) then got three full zero
// tensors, three copies and two full-size sums. When a gradient has already reached x and the
// engine holds that sum alone (sole_owner), the node adds its gradient into the slice of the sum
// instead (Node::add_into): the first slice still makes the zeros, each later one adds one
// slice's worth. In the sum's other elements this adds nothing (s + 0 == s, except that -0
// becomes +0, as the full-size sum made it too); inside the slice the additions are the same.
class GraphTask {
 public:
  GraphTask(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs,
            bool retain_graph)
      : retain_graph_(retain_graph) {
    GROVE_CHECK(grad_outputs.empty() || grad_outputs.size() == outputs.size(), "autograd: got ",
                outputs.size(), " outputs but ", grad_outputs.size(),
                " output gradients; pass one per output (or none)");
    GROVE_CHECK(!outputs.empty(), "autograd: no outputs to differentiate");
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      const Tensor& output = outputs[i];
      GROVE_CHECK(output.defined(), "autograd: output ", i, " is undefined");
      check_view_is_current(output, "backward");
      Edge edge = gradient_edge(output);
      GROVE_CHECK(edge.valid(), "autograd: output ", i, " (", describe(output),
                  ") does not require gradients and has no history: nothing to differentiate. "
                  "Was it computed inside a NoGradGuard, or from tensors without "
                  "requires_grad_()?");
      Tensor grad = grad_outputs.empty() ? Tensor() : grad_outputs[i];
      if (!grad.defined()) {
        GROVE_CHECK(output.numel() == 1,
                    "autograd: a gradient can be implied only for an output "
                    "with one element, but output ",
                    i, " is ", describe(output), "; pass a gradient of that shape");
        grad = ones(output.sizes(), TensorOptions(output.dtype()).device(output.device()));
      } else {
        GROVE_CHECK(grad.sizes() == output.sizes() && grad.dtype() == output.dtype() &&
                        grad.device() == output.device(),
                    "autograd: the gradient for output ", i, " must match it (", describe(output),
                    " on ", output.device(), "), but got ", describe(grad), " on ", grad.device(),
                    "; make it with the output's sizes, dtype and device");
      }
      roots_.emplace_back(std::move(edge), std::move(grad));
    }
    count_dependencies();
  }

  // grad(): gradients of `inputs` are collected instead of accumulated into leaves.
  std::vector<Tensor> capture(const std::vector<Tensor>& inputs, bool allow_unused) {
    capturing_ = true;
    captured_.resize(inputs.size());
    reached_.assign(inputs.size(), false);
    for (auto& [node, state] : states_) state.needed = false;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const Tensor& input = inputs[i];
      GROVE_CHECK(input.defined() && input.requires_grad(), "autograd::grad: input ", i,
                  input.defined() ? " (" + describe(input) + ")" : std::string(),
                  " does not require gradients");
      check_view_is_current(input, "autograd::grad");
      Edge edge = capture_edge(input);
      auto found = edge.valid() ? states_.find(edge.node.get()) : states_.end();
      GROVE_CHECK(found != states_.end() || allow_unused, "autograd::grad: input ", i, " (",
                  describe(input),
                  ") was not used to compute the outputs; pass allow_unused to get an undefined "
                  "gradient for it");
      if (found == states_.end()) continue;
      reached_[i] = true;
      found->second.captures.emplace_back(edge.input_nr, i);
      found->second.needed = true;
    }
    mark_needed();
    run();
    // A used input that no gradient reached (the graph zeroed its influence, as fill_ does)
    // has gradient zero.
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (!captured_[i].defined() && reached_[i]) captured_[i] = zeros_like(inputs[i]);
    }
    return std::move(captured_);
  }

  void run_backward() { run(); }

 private:
  // The edge a captured input's gradient arrives on. A leaf's accumulator is looked up, not
  // made: if the graph never used the leaf, there is none.
  static Edge capture_edge(const Tensor& input) {
    const AutogradMeta* meta = meta_of(input);
    if (meta != nullptr && meta->grad_fn) return {meta->grad_fn, meta->output_nr};
    if (meta == nullptr) return {};
    return {meta->grad_accumulator.lock(), 0};
  }

  void count_dependencies() {
    std::vector<Node*> stack;
    for (auto& [edge, grad] : roots_) {
      if (states_.try_emplace(edge.node.get()).second) stack.push_back(edge.node.get());
    }
    while (!stack.empty()) {
      Node* node = stack.back();
      stack.pop_back();
      for (const Edge& next : node->next_edges()) {
        if (!next.valid()) continue;
        auto [it, inserted] = states_.try_emplace(next.node.get());
        ++it->second.dependencies;
        if (inserted) stack.push_back(next.node.get());
      }
    }
  }

  // needed(n) = n has captures or some node after n is needed; runs(n) = some node after n is
  // needed. Computed in reverse topological order (children before parents).
  void mark_needed() {
    std::vector<Node*> order = topological_order();
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      NodeState& state = states_.at(*it);
      state.runs = false;
      for (const Edge& next : (*it)->next_edges()) {
        if (next.valid() && states_.at(next.node.get()).needed) state.runs = true;
      }
      state.needed = state.needed || state.runs;
    }
  }

  std::vector<Node*> topological_order() {
    std::unordered_map<Node*, int> remaining;
    for (auto& [node, state] : states_) remaining[node] = state.dependencies;
    std::vector<Node*> order;
    for (auto& [node, count] : remaining) {
      if (count == 0) order.push_back(node);
    }
    for (std::size_t i = 0; i < order.size(); ++i) {
      for (const Edge& next : order[i]->next_edges()) {
        if (next.valid() && --remaining[next.node.get()] == 0) order.push_back(next.node.get());
      }
    }
    return order;
  }

  // See Note [Adding a view's gradient into the sum].
  bool add_into_sum(Node& node, const std::vector<Tensor>& grads) {
    const std::vector<Edge>& edges = node.next_edges();
    if (edges.size() != 1 || !edges[0].valid()) return false;
    NodeState& next_state = states_.at(edges[0].node.get());
    if (edges[0].input_nr >= next_state.buffer.size()) return false;
    Tensor& slot = next_state.buffer[edges[0].input_nr];
    return slot.defined() && sole_owner(slot) && node.add_into(slot, grads);
  }

  void run() {
    const NoGradGuard no_grad;
    const ops::AutocastGuard no_autocast(std::nullopt);  // see Note [Autocast]
    using Ready = std::pair<std::uint64_t, Node*>;
    std::priority_queue<Ready> ready;
    for (auto& [edge, grad] : roots_) {
      NodeState& state = states_.at(edge.node.get());
      state.buffer.resize(edge.node->num_outputs());
      accumulate(state.buffer[edge.input_nr], std::move(grad));
    }
    for (auto& [node, state] : states_) {
      if (state.dependencies == 0) ready.emplace(node->sequence_nr(), node);
    }
    while (!ready.empty()) {
      Node* node = ready.top().second;
      ready.pop();
      NodeState& state = states_.at(node);
      std::vector<Tensor> grads = std::move(state.buffer);
      grads.resize(node->num_outputs());
      if (state.needed) node->run_pre_hooks(grads);
      for (auto [output_nr, index] : state.captures) captured_[index] = kept(grads[output_nr]);
      std::vector<Tensor> input_grads;  // empty when add_into_sum added the only one
      if (!capturing_ || state.runs) {
        const bool added = add_into_sum(*node, grads);
        if (!added) input_grads = node->apply(std::move(grads));
        if (!retain_graph_) node->release_saved();
        GROVE_INTERNAL_ASSERT(added || input_grads.size() == node->next_edges().size(),
                              node->name(), " returned ", input_grads.size(), " gradients for ",
                              node->next_edges().size(), " inputs");
      }
      const std::vector<Edge>& edges = node->next_edges();
      for (std::size_t i = 0; i < edges.size(); ++i) {
        const Edge& next = edges[i];
        if (!next.valid()) continue;
        NodeState& next_state = states_.at(next.node.get());
        if (i < input_grads.size() && input_grads[i].defined()) {
          next_state.buffer.resize(next.node->num_outputs());
          accumulate(next_state.buffer[next.input_nr], std::move(input_grads[i]));
        }
        if (--next_state.dependencies == 0)
          ready.emplace(next.node->sequence_nr(), next.node.get());
      }
    }
  }

  bool retain_graph_;
  bool capturing_ = false;
  std::vector<std::pair<Edge, Tensor>> roots_;
  std::unordered_map<Node*, NodeState> states_;
  std::vector<Tensor> captured_;  // grad(): one per input
  std::vector<bool> reached_;     // grad(): the input is part of the graph
};

}  // namespace

namespace {
thread_local std::uint64_t backward_passes = 0;
}  // namespace

void backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs,
              bool retain_graph) {
  ++backward_passes;
  GraphTask task(outputs, grad_outputs, retain_graph);
  task.run_backward();
}

std::uint64_t backward_passes_on_this_thread() {
  return backward_passes;
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, GradOptions options) {
  GraphTask task(outputs, grad_outputs, options.retain_graph);
  return task.capture(inputs, options.allow_unused);
}

}  // namespace grove::autograd
