// TracedFunction: tracing one signature, partitioning it, registering its graphs with the tree
// manager, and the autograd node that runs the backward graph.
#include "graphs/compile/traced_function.h"

#include <algorithm>
#include <sstream>

#include "autograd/autograd_meta.h"
#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "autograd/grad_writes.h"
#include "core/host_reads.h"
#include "graphs/trace/tracer.h"

namespace grove::graphs {
namespace {

// Runs `interpreter` on `all` = (inputs..., statics...) without recording autograd: the
// compiled function's own node stands for the whole graph.
TensorList interpret(Interpreter& interpreter, const TensorList& all, std::size_t num_inputs) {
  const autograd::NoGradGuard no_grad;
  const std::span<const Tensor> everything(all);
  return interpreter.run(everything.first(num_inputs), everything.subspan(num_inputs));
}

// The backward of a compiled function's outputs: runs its backward graph. One per call.
class CompiledBackward final : public autograd::Node {
 public:
  CompiledBackward(std::shared_ptr<TracedFunction> traced, std::vector<Tensor> saved,
                   std::vector<autograd::TensorMeta> output_metas,
                   std::vector<autograd::Edge> edges, std::string name,
                   const std::source_location& where)
      : Node(static_cast<std::uint32_t>(output_metas.size()), std::move(edges)),
        traced_(std::move(traced)),
        where_(where),
        saved_(std::move(saved)),
        output_metas_(std::move(output_metas)),
        name_(std::move(name)) {
    for (const Tensor& tensor : saved_) saved_versions_.push_back(tensor.version());
  }

  std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) override {
    GROVE_CHECK(!released_, name(),
                ": the backward of this call already ran and freed what it saved; pass "
                "retain_graph=true to the first backward to run it twice");
    TensorList inputs = saved_;
    for (std::size_t k = 0; k < saved_.size(); ++k) {
      GROVE_CHECK(saved_[k].version() == saved_versions_[k], name(), ": saved tensor ", k, " (",
                  autograd::describe(saved_[k]),
                  ") was modified in place after the compiled call; its backward needs the "
                  "values it had then. Clone it before changing it");
    }
    for (std::size_t j = 0; j < output_metas_.size(); ++j) {
      const autograd::TensorMeta& meta = output_metas_[j];
      inputs.push_back(grad_outputs[j].defined()
                           ? grad_outputs[j]
                           : zeros(meta.sizes, TensorOptions(meta.dtype).device(meta.device)));
    }
    const ExplainScope explain_scope(traced_->explain_setting());  // as the forward's call
    TensorList grads = traced_->run_backward(inputs, where_);
    return grads;
  }

  std::string name() const override { return name_; }
  void release_saved() override {
    saved_.clear();
    released_ = true;
  }

 protected:
  void release_resources() override {
    saved_.clear();
    traced_.reset();
    Node::release_resources();
  }

 private:
  std::shared_ptr<TracedFunction> traced_;
  std::source_location where_;  // of the compiled call whose backward this is
  std::vector<Tensor> saved_;
  std::vector<std::uint64_t> saved_versions_;
  std::vector<autograd::TensorMeta> output_metas_;
  std::string name_;
  bool released_ = false;
};

// "x0", "grad2": names of inputs in the traced graph. (Built by appending: g++ 12 warns
// falsely about `"x" + std::to_string(i)` at -O3, -Wrestrict.)
std::string indexed(const char* prefix, std::size_t index) {
  std::string name = prefix;
  name += std::to_string(index);
  return name;
}

}  // namespace

Signature Signature::of(const TensorList& inputs) {
  Signature signature;
  signature.grad_mode = autograd::GradMode::is_enabled();
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& input = inputs[i];
    GROVE_CHECK(input.defined(), "compiled function: input ", i,
                " is undefined; pass defined tensors");
    signature.inputs.push_back(
        {DimVector(input.sizes()), input.dtype(), input.device(), input.requires_grad()});
  }
  return signature;
}

std::string Signature::describe() const {
  std::ostringstream out;
  out << "(";
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Input& input = inputs[i];
    out << (i == 0 ? "" : ", ") << dtype_name(input.dtype) << input.sizes;
    if (!input.device.is_cpu()) out << " on " << input.device;
    if (input.requires_grad) out << " requires_grad";
  }
  out << "), grad " << (grad_mode ? "on" : "off");
  return out.str();
}

std::shared_ptr<TracedFunction> TracedFunction::trace(
    const std::function<TensorList(const TensorList&)>& function, const TensorList& inputs,
    const CompileOptions& options) {
  std::shared_ptr<TracedFunction> traced(new TracedFunction());
  traced->name_ = options.name;
  traced->mode_ = options.mode;
  traced->explain_ = options.explain;
  traced->num_inputs_ = inputs.size();
  Graph joint(options.name);
  std::int32_t forward_end = 0;
  const std::uint64_t first_serial = Storage::latest_serial();
  std::optional<autograd::GradWriteLog> grad_writes(std::in_place);  // until the function returns
  try {
    Tracer tracer(joint);
    for (std::size_t i = 0; i < inputs.size(); ++i) tracer.add_input(inputs[i], indexed("x", i));
    const std::uint64_t passes_before = autograd::backward_passes_on_this_thread();
    const TensorList outputs = function(inputs);
    // A function that ran backward() itself is a whole step (forward, backward, update): one
    // graph, whose outputs need no gradient of their own.
    traced->whole_step_ = autograd::backward_passes_on_this_thread() != passes_before;
    const std::vector<autograd::GradWrite> writes = grad_writes->writes();
    grad_writes.reset();
    forward_end = static_cast<std::int32_t>(joint.nodes().size());
    traced->num_outputs_ = outputs.size();
    TensorList results = outputs;
    // The backward: the engine on the outputs that require gradients, with placeholders.
    std::vector<Tensor> differentiable, placeholders, targets;
    if (autograd::GradMode::is_enabled() && !traced->whole_step_) {
      for (std::size_t i = 0; i < outputs.size(); ++i) {
        if (!outputs[i].defined() || !outputs[i].requires_grad()) continue;
        traced->differentiable_.push_back(i);
        differentiable.push_back(outputs[i]);
        Tensor placeholder =
            ones(outputs[i].sizes(), TensorOptions(outputs[i].dtype()).device(outputs[i].device()));
        tracer.add_input(placeholder, indexed("grad", i));
        placeholders.push_back(std::move(placeholder));
      }
    }
    if (!differentiable.empty()) {
      std::vector<std::int64_t> candidates;
      for (std::size_t i = 0; i < inputs.size(); ++i) {
        if (!inputs[i].requires_grad()) continue;
        candidates.push_back(static_cast<std::int64_t>(i));
        targets.push_back(inputs[i]);
      }
      const std::vector<Tensor>& statics = tracer.static_tensors();
      for (std::size_t k = 0; k < statics.size(); ++k) {
        if (!statics[k].requires_grad()) continue;
        candidates.push_back(-1 - static_cast<std::int64_t>(k));
        targets.push_back(statics[k]);
      }
      const std::vector<Tensor> grads =
          targets.empty() ? std::vector<Tensor>{}
                          : autograd::grad(differentiable, targets, placeholders,
                                           {.retain_graph = false, .allow_unused = true});
      for (std::size_t t = 0; t < grads.size(); ++t) {
        if (!grads[t].defined()) continue;  // the outputs do not depend on this target
        traced->grad_targets_.push_back(candidates[t]);
        results.push_back(grads[t]);
      }
      traced->has_backward_ = !traced->grad_targets_.empty();
    }
    if (traced->whole_step_) traced->keep_made_gradients(tracer, first_serial);
    tracer.finish(results);
    traced->statics_ = tracer.static_tensors();
    traced->note_gradient_state(writes);
    std::vector<Tensor> held = results;
    held.insert(held.end(), placeholders.begin(), placeholders.end());
    traced->kept_state_ = tracer.values_kept_outside(held);
    if (!traced->has_backward_) {
      // The trace ran the function for real: its outputs are this call's (see take_outputs).
      traced->first_outputs_.emplace();
      for (const Tensor& output : outputs) traced->first_outputs_->push_back(output.detach());
    }
  } catch (const HostReadDuringTrace& error) {
    traced->eager_reason_ = error.message();
    return traced;
  }
  joint.verify();
  // One device per trace: its tree manager is per device.
  traced->device_ = inputs.empty()
                        ? (traced->statics_.empty() ? kCPU : traced->statics_[0].device())
                        : inputs[0].device();
  for (const Value& value : joint.values()) {
    if (value.device == traced->device_) continue;
    std::ostringstream reason;
    reason << "it uses tensors on " << value.device << " and on " << traced->device_
           << "; a graph runs on one device";
    traced->eager_reason_ = reason.str();
    return traced;
  }
  if (!traced->kept_state_.empty()) {
    std::string values;
    for (const std::string& value : traced->kept_state_)
      values += (values.empty() ? "" : "; ") + value;
    traced->eager_reason_ = "it keeps tensors it made during the call (" + values +
                            ") past the call: state a replay could not update";
    return traced;
  }
  for (const std::size_t i : traced->differentiable_) {
    if (!traced->has_backward_) break;
    const OutputAlias alias = joint.output_alias(i);
    if (alias.kind != AliasKind::None) {
      std::ostringstream reason;
      reason << "output " << i << " is " << alias_kind_name(alias.kind) << " " << alias.index
             << " and needs a gradient; return a new tensor (clone() it)";
      traced->eager_reason_ = reason.str();
      return traced;
    }
  }
  if (traced->has_backward_) {
    traced->parts_ = partition_joint(joint, traced->num_inputs_, traced->num_outputs_, forward_end);
    traced->parts_->forward.verify();
    traced->parts_->backward.verify();
    traced->parts_->forward.compact_uniform_constants();
    traced->parts_->backward.compact_uniform_constants();
  } else {
    traced->inference_ = without_dead_nodes(joint, joint.name() + "_inference");
    traced->inference_->verify();
    traced->inference_->compact_uniform_constants();
  }
  traced->build(options);
  return traced;
}

void TracedFunction::build(const CompileOptions& options) {
  if (has_backward_) {
    forward_interpreter_ = std::make_unique<Interpreter>(parts_->forward);
    backward_interpreter_ = std::make_unique<Interpreter>(parts_->backward);
  } else {
    forward_interpreter_ = std::make_unique<Interpreter>(*inference_);
  }
  if (mode_ != CompileMode::Graphed) return;
  TreeManager& manager = tree_manager(device_);
  if (options.tree_options) manager.options() = *options.tree_options;
  auto wrap = [&](const Graph& graph, Interpreter* interpreter, FunctionMode mode,
                  const char* part) {
    WrappedFunction function;
    function.name = name_ + " " + part;
    function.mode = mode;
    const std::size_t num_inputs = graph.inputs().size();
    for (std::size_t i = 0; i < graph.statics().size(); ++i) {
      function.static_input_indices.push_back(static_cast<int>(num_inputs + i));
    }
    // Inputs the graph writes in place (a whole step's parameters and gradients), declared so
    // the manager knows them from the start instead of finding them in the warm-up.
    for (const Node& node : graph.nodes()) {
      for (std::size_t w = 0; w < written_inputs(node); ++w) {
        const Value& root = graph.value(graph.root(node.inputs[w]));
        int index = -1;
        if (root.origin == ValueOrigin::Input) index = root.index;
        if (root.origin == ValueOrigin::Static) index = static_cast<int>(num_inputs) + root.index;
        if (index >= 0 && std::find(function.mutated_input_indices.begin(),
                                    function.mutated_input_indices.end(),
                                    index) == function.mutated_input_indices.end()) {
          function.mutated_input_indices.push_back(index);
        }
      }
    }
    for (const ValueId id : graph.inputs()) function.input_names.push_back(graph.value_name(id));
    for (const ValueId id : graph.statics()) function.input_names.push_back(graph.value_name(id));
    function.callable = [interpreter, num_inputs](const TensorList& all) {
      return interpret(*interpreter, all, num_inputs);
    };
    return manager.add_function(std::move(function));
  };
  if (has_backward_) {
    forward_function_ =
        wrap(parts_->forward, forward_interpreter_.get(), FunctionMode::Forward, "forward");
    backward_function_ =
        wrap(parts_->backward, backward_interpreter_.get(), FunctionMode::Backward, "backward");
  } else {
    forward_function_ =
        wrap(*inference_, forward_interpreter_.get(), FunctionMode::Inference, "inference");
  }
}

bool TracedFunction::static_released() const {
  for (std::size_t j = 0; j < statics_.size(); ++j) {
    // A gradient buffer of keep_made_gradients is the trace's own: another trace of the same
    // function (another batch size) puts its buffers into grad() in turn, which drops these.
    const bool own_buffer = std::any_of(
        grad_buffers_.begin(), grad_buffers_.end(),
        [&](const std::pair<std::size_t, std::size_t>& kept) { return kept.second == j; });
    if (!own_buffer && statics_[j].impl()->strong_count() == 1) return true;
  }
  return false;
}

// Whole steps: a gradient the step made (a leaf's grad() was none, so accumulation adopted the
// new tensor) would live in the graph's pool, lent for one step, and change identity on every
// call. Instead the trace copies it into a buffer of its own, a static input, which becomes the
// leaf's grad() now and after every call: grad() keeps one tensor across steps, valid until
// the leaf's next gradient is written, as in eager mode.
void TracedFunction::keep_made_gradients(Tracer& tracer, std::uint64_t first_serial) {
  const std::vector<Tensor> statics = tracer.static_tensors();
  for (std::size_t k = 0; k < statics.size(); ++k) {
    const Tensor grad = statics[k].requires_grad() ? statics[k].grad() : Tensor();
    if (!grad.defined() || grad.storage()->serial() <= first_serial) continue;
    Tensor buffer;
    {
      const SuspendCoreObservers quiet;  // the buffer is an input of the graph, not its work
      buffer = empty_like(grad);
    }
    std::string name = "grad";
    name += std::to_string(k);
    tracer.add_static(buffer, std::move(name));
    {
      const autograd::NoGradGuard no_grad;
      buffer.copy_(grad);  // traced: the graph's last write
    }
    statics[k].set_grad(buffer);
    grad_buffers_.emplace_back(k, tracer.static_tensors().size() - 1);
  }
}

// Whole steps: the state of the leaves' gradients that the trace depends on.
void TracedFunction::note_gradient_state(const std::vector<autograd::GradWrite>& writes) {
  for (std::size_t k = 0; k < statics_.size(); ++k) {
    const Tensor& leaf = statics_[k];
    for (const autograd::GradWrite& write : writes) {
      if (write.leaf.impl() == leaf.impl())
        grad_defined_at_entry_.emplace_back(k, write.defined_before);
    }
    // A gradient the graph reads or adds into is one of its statics, by identity (a buffer of
    // keep_made_gradients is the graph's own, put back into grad() after every call).
    const Tensor grad = leaf.requires_grad() ? leaf.grad() : Tensor();
    if (!grad.defined()) continue;
    for (std::size_t j = 0; j < statics_.size(); ++j) {
      const bool own_buffer = std::find(grad_buffers_.begin(), grad_buffers_.end(),
                                        std::pair{k, j}) != grad_buffers_.end();
      if (statics_[j].impl() == grad.impl() && !own_buffer) grad_statics_.emplace_back(k, j);
    }
  }
}

bool TracedFunction::gradient_state_matches() const {
  for (const auto& [k, defined] : grad_defined_at_entry_) {
    if (statics_[k].grad().defined() != defined) return false;
  }
  return true;
}

bool TracedFunction::gradient_replaced() const {
  for (const auto& [k, j] : grad_statics_) {
    if (statics_[k].grad().impl() != statics_[j].impl()) return true;
  }
  return false;
}

TensorList TracedFunction::call(const TensorList& inputs, const std::source_location& where) {
  GROVE_INTERNAL_ASSERT(!eager(), "TracedFunction::call on an eager trace");
  const Graph& graph = has_backward_ ? parts_->forward : *inference_;
  const std::vector<std::int32_t>& used_statics =
      has_backward_ ? parts_->forward_statics : std::vector<std::int32_t>{};
  TensorList all = inputs;
  if (has_backward_) {
    for (const std::int32_t k : used_statics) all.push_back(statics_[static_cast<std::size_t>(k)]);
  } else {
    for (const Tensor& tensor : statics_) all.push_back(tensor);
  }
  GROVE_INTERNAL_ASSERT(all.size() == graph.inputs().size() + graph.statics().size(),
                        "compiled call: ", all.size(), " tensors for graph ", graph.name());
  TensorList outputs = forward_function_ ? (*forward_function_)(all, where)
                                         : interpret(*forward_interpreter_, all, inputs.size());
  if (!has_backward_) {
    for (const auto& [k, j] : grad_buffers_) {
      if (statics_[k].grad().impl() != statics_[j].impl()) statics_[k].set_grad(statics_[j]);
    }
    return outputs;
  }

  // The saved values: the function's inputs the backward reads, and what the forward returned
  // after the function's outputs (Note [What the forward saves for the backward]).
  std::vector<Tensor> saved;
  std::size_t next_computed = num_outputs_;
  for (const std::int32_t input : parts_->saved_input_index) {
    saved.push_back(input >= 0 ? inputs[static_cast<std::size_t>(input)].detach()
                               : outputs[next_computed++]);
  }
  outputs.resize(num_outputs_);
  std::vector<autograd::Edge> edges;
  for (const std::int64_t target : grad_targets_) {
    const Tensor& tensor = target >= 0 ? inputs[static_cast<std::size_t>(target)]
                                       : statics_[static_cast<std::size_t>(-1 - target)];
    edges.push_back(tensor.requires_grad() ? autograd::gradient_edge(tensor) : autograd::Edge{});
  }
  std::vector<autograd::TensorMeta> metas;
  for (const std::size_t i : differentiable_) metas.push_back(autograd::TensorMeta::of(outputs[i]));
  auto node = IntrusivePtr<CompiledBackward>::make(shared_from_this(), std::move(saved),
                                                   std::move(metas), std::move(edges),
                                                   "CompiledBackward(" + name_ + ")", where);
  for (std::size_t j = 0; j < differentiable_.size(); ++j) {
    autograd::set_history(outputs[differentiable_[j]], node, static_cast<std::uint32_t>(j));
  }
  return outputs;
}

TensorList TracedFunction::run_backward(const TensorList& saved_and_grads,
                                        const std::source_location& where) {
  TensorList all = saved_and_grads;
  for (const std::int32_t k : parts_->backward_statics) {
    all.push_back(statics_[static_cast<std::size_t>(k)]);
  }
  if (!backward_function_) {
    return interpret(*backward_interpreter_, all, saved_and_grads.size());
  }
  // The gradients live in the tree manager's pool until the generation ends; autograd copies
  // the ones it keeps longer (Note [Memory lent by a graph pool] in core/storage.h).
  return (*backward_function_)(all, where);
}

std::string TracedFunction::dump() const {
  if (eager()) return "runs eagerly: " + *eager_reason_ + "\n";
  if (!has_backward_) return inference_->to_text();
  return parts_->forward.to_text() + parts_->backward.to_text();
}

}  // namespace grove::graphs
