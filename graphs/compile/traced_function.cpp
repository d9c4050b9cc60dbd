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

// "x0", "grad2": names of inputs in the traced graph. (Built by appending: g++ 12 warns
// falsely about `"x" + std::to_string(i)` at -O3, -Wrestrict.)
std::string indexed(const char* prefix, std::size_t index) {
  std::string name = prefix;
  name += std::to_string(index);
  return name;
}

TensorList detached(const TensorList& tensors) {
  TensorList result;
  result.reserve(tensors.size());
  for (const Tensor& tensor : tensors)
    result.push_back(tensor.defined() ? tensor.detach() : tensor);
  return result;
}

}  // namespace

std::shared_ptr<TracedFunction> TracedFunction::trace(
    const std::function<TensorList(const TensorList&)>& function, const TensorList& inputs,
    const CompileOptions& options, const std::source_location& where,
    std::optional<TensorList>* outputs) {
  std::shared_ptr<TracedFunction> traced(new TracedFunction());
  traced->name_ = options.name;
  traced->mode_ = options.mode;
  traced->explain_ = options.explain;
  traced->num_inputs_ = inputs.size();
  std::optional<TensorList> results = traced->run_traced(function, inputs, options, where);
  if (outputs != nullptr) *outputs = std::move(results);
  return traced;
}

// The call's eager run under a Tracer, and what is made of it: see
// Note [Exactly one eager call's effects]. Returns the call's outputs, but for a host access
// refused under or_error.
std::optional<TensorList> TracedFunction::run_traced(
    const std::function<TensorList(const TensorList&)>& function, const TensorList& inputs,
    const CompileOptions& options, const std::source_location& where) {
  Graph joint(name_);
  std::int32_t forward_end = 0;
  const std::uint64_t first_serial = Storage::latest_serial();
  std::optional<autograd::GradWriteLog> grad_writes(std::in_place);  // until the function returns
  Tracer tracer(joint, options.or_error ? Tracer::OnHostAccess::Throw : Tracer::OnHostAccess::Stop);
  for (std::size_t i = 0; i < inputs.size(); ++i) tracer.add_input(inputs[i], indexed("x", i));
  const std::uint64_t passes_before = autograd::backward_passes_on_this_thread();
  TensorList outputs;
  try {
    outputs = function(inputs);
  } catch (const HostReadDuringTrace& error) {  // under or_error: the call reports it
    eager_reason_ = error.message();
    return std::nullopt;
  }
  // A trace that cannot be replayed (a host access stopped it, and the function ran on eagerly
  // to its end; or see below): the eager run was this call's, and its outputs keep their eager
  // autograd history.
  auto run_as_written = [&](std::string reason) {
    eager_reason_ = std::move(reason);
    return std::optional<TensorList>(outputs);
  };
  if (tracer.stopped()) return run_as_written(tracer.stop_reason());
  // A function that ran backward() itself is a whole step (forward, backward, update): one
  // graph, whose outputs need no gradient of their own.
  whole_step_ = autograd::backward_passes_on_this_thread() != passes_before;
  const std::vector<autograd::GradWrite> writes = grad_writes->writes();
  grad_writes.reset();
  forward_end = static_cast<std::int32_t>(joint.nodes().size());
  num_outputs_ = outputs.size();
  TensorList results = outputs;
  // The backward: the engine on the outputs that require gradients, with placeholders. The
  // eager graph is kept (retain_graph) until the trace is known to be usable.
  std::vector<Tensor> differentiable, placeholders, targets;
  std::vector<StoragePtr> live;  // what the eager run left, for this call's backward
  if (autograd::GradMode::is_enabled() && !whole_step_) {
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      if (!outputs[i].defined() || !outputs[i].requires_grad()) continue;
      differentiable_.push_back(i);
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
    live = tracer.live_storages();
    const std::vector<Tensor> grads =
        targets.empty() ? std::vector<Tensor>{}
                        : autograd::grad(differentiable, targets, placeholders,
                                         {.retain_graph = true, .allow_unused = true});
    if (tracer.stopped()) return run_as_written(tracer.stop_reason());  // a hook read a value
    for (std::size_t t = 0; t < grads.size(); ++t) {
      if (!grads[t].defined()) continue;  // the outputs do not depend on this target
      grad_targets_.push_back(candidates[t]);
      results.push_back(grads[t]);
    }
    has_backward_ = !grad_targets_.empty();
  }
  if (whole_step_) keep_made_gradients(tracer, first_serial);
  tracer.finish(results);
  statics_ = tracer.static_tensors();
  note_gradient_state(writes);
  joint.verify();
  // One device per trace: its tree manager is per device.
  device_ = inputs.empty() ? (statics_.empty() ? kCPU : statics_[0].device()) : inputs[0].device();
  for (const Value& value : joint.values()) {
    if (value.device == device_) continue;
    std::ostringstream reason;
    reason << "it uses tensors on " << value.device << " and on " << device_
           << "; a graph runs on one device";
    return run_as_written(reason.str());
  }
  for (const std::size_t i : differentiable_) {
    if (!has_backward_) break;
    const OutputAlias alias = joint.output_alias(i);
    if (alias.kind != AliasKind::None) {
      std::ostringstream reason;
      reason << "output " << i << " is " << alias_kind_name(alias.kind) << " " << alias.index
             << " and needs a gradient; return a new tensor (clone() it)";
      return run_as_written(reason.str());
    }
  }
  // From here on this call's outputs are the eager run's values without their eager graph
  // (dropped now, so that it holds nothing): with a backward, they get a compiled call's node.
  TensorList first = detached(outputs);
  TensorList held = detached(results);
  held.insert(held.end(), placeholders.begin(), placeholders.end());
  outputs.clear();
  results.clear();
  differentiable.clear();
  kept_state_ = tracer.values_kept_outside(held, live);
  if (has_backward_) {
    parts_ = partition_joint(joint, num_inputs_, num_outputs_, forward_end);
    parts_->forward.verify();
    parts_->backward.verify();
    parts_->forward.compact_uniform_constants();
    parts_->backward.compact_uniform_constants();
  } else {
    inference_ = without_dead_nodes(joint, joint.name() + "_inference");
    inference_->verify();
    inference_->compact_uniform_constants();
  }
  if (!kept_state_.empty()) {
    std::string values;
    for (const std::string& value : kept_state_) values += (values.empty() ? "" : "; ") + value;
    eager_reason_ = "it keeps tensors it made during the call (" + values +
                    ") past the call: state a replay could not update";
  }
  build(options);
  return finish_first_call(tracer, live, inputs, std::move(first), where);
}

// This call's outputs (Note [Exactly one eager call's effects]): with a backward, the node of a
// compiled call, whose backward graph runs interpreted on the values the eager run left.
TensorList TracedFunction::finish_first_call(const Tracer& tracer,
                                             const std::vector<StoragePtr>& live,
                                             const TensorList& inputs, TensorList outputs,
                                             const std::source_location& where) {
  if (has_backward_) {
    const Graph& joint = tracer.graph();
    std::vector<Tensor> saved;
    for (std::size_t k = 0; k < parts_->saved.size(); ++k) {
      const std::int32_t input = parts_->saved_input_index[k];
      if (input >= 0) {
        saved.push_back(inputs[static_cast<std::size_t>(input)].detach());
        continue;
      }
      const Value& value = joint.value(parts_->saved[k]);
      const Storage* storage = tracer.storage_of(parts_->saved[k]);
      const auto found = std::find_if(live.begin(), live.end(), [&](const StoragePtr& candidate) {
        return candidate.get() == storage;
      });
      GROVE_INTERNAL_ASSERT(storage != nullptr && found != live.end(), "compiled function '", name_,
                            "': a value its backward reads (",
                            joint.describe_value(parts_->saved[k]),
                            ") was not alive when the function returned");
      saved.emplace_back(IntrusivePtr<TensorImpl>::make(*found, value.dtype, value.sizes,
                                                        value.strides, value.storage_offset));
    }
    attach_compiled_backward(shared_from_this(), outputs, differentiable_, std::move(saved),
                             gradient_edges(inputs), "CompiledBackward(" + name_ + ")", where,
                             BackwardRoute::Interpreted);
  }
  return outputs;
}

std::vector<autograd::Edge> TracedFunction::gradient_edges(const TensorList& inputs) const {
  std::vector<autograd::Edge> edges;
  for (const std::int64_t target : grad_targets_) {
    const Tensor& tensor = target >= 0 ? inputs[static_cast<std::size_t>(target)]
                                       : statics_[static_cast<std::size_t>(-1 - target)];
    edges.push_back(tensor.requires_grad() ? autograd::gradient_edge(tensor) : autograd::Edge{});
  }
  return edges;
}

void TracedFunction::build(const CompileOptions& options) {
  if (has_backward_) {
    forward_interpreter_ = std::make_unique<Interpreter>(parts_->forward);
    backward_interpreter_ = std::make_unique<Interpreter>(parts_->backward);
  } else {
    forward_interpreter_ = std::make_unique<Interpreter>(*inference_);
  }
  if (mode_ != CompileMode::Graphed || eager()) return;
  TreeManager& manager = tree_manager(device_);
  if (options.tree_options) manager.options() = *options.tree_options;
  auto wrap = [&](const Graph& graph, Interpreter* interpreter, FunctionMode mode,
                  const char* part) {
    WrappedFunction function;
    function.name = name_ + " " + part;
    function.mode = mode;
    function.warmed_up = true;  // by the call that traced (Note [Exactly one eager call's effects])
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
        if (index >= 0 &&
            std::find(function.mutated_input_indices.begin(), function.mutated_input_indices.end(),
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
  attach_compiled_backward(shared_from_this(), outputs, differentiable_, std::move(saved),
                           gradient_edges(inputs), "CompiledBackward(" + name_ + ")", where,
                           BackwardRoute::Managed);
  return outputs;
}

TensorList TracedFunction::run_backward(const TensorList& saved_and_grads,
                                        const std::source_location& where, BackwardRoute route) {
  TensorList all = saved_and_grads;
  for (const std::int32_t k : parts_->backward_statics) {
    all.push_back(statics_[static_cast<std::size_t>(k)]);
  }
  if (!backward_function_ || route == BackwardRoute::Interpreted) {
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
