// GraphNode: recording, invariant checks and replay. See graph_node.h.
#include "graphs/tree/graph_node.h"

#include <algorithm>
#include <unordered_map>

#include "autograd/grad_mode.h"
#include "core/format.h"
#include "graphs/tree/pool_scope.h"

namespace grove::graphs {
namespace {

// Tensors over memory the node does not own (pool memory owned by the graphs of the tree).
Tensor non_owning_tensor(void* storage_data, std::size_t nbytes, Device device, DType dtype,
                         IntArrayRef sizes, IntArrayRef strides, std::int64_t storage_offset) {
  StoragePtr storage = Storage::wrap(DataPtr(storage_data, device), nbytes);
  return Tensor(
      IntrusivePtr<TensorImpl>::make(std::move(storage), dtype, sizes, strides, storage_offset));
}

// Narrows every expanded (stride-0) dim to size 1, so a copy writes each element once.
Tensor without_expanded_dims(const Tensor& tensor, const std::vector<std::int64_t>& dims) {
  Tensor result = tensor;
  for (std::int64_t dim : dims) result = result.narrow(dim, 0, 1);
  return result;
}

// Output `plan` (a CopiedInput) as the view of the caller's input it is eagerly. The input has
// the recorded strides (they are part of the signature); its offset is its own, the buffer's
// was 0.
Tensor view_of_copied_input(const OutputPlan& plan, const TensorList& inputs) {
  const Tensor& input = inputs[static_cast<std::size_t>(plan.index)];
  return input.as_strided(plan.sizes, plan.strides, input.storage_offset() + plan.storage_offset);
}

bool contains(const std::vector<int>& values, int value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

std::vector<PathIndex> changed_indices(const PathLiveness& before, const PathLiveness& after) {
  std::vector<PathIndex> changed;
  for (std::size_t depth = 0; depth < before.size() && depth < after.size(); ++depth) {
    for (std::size_t i = 0; i < before[depth].size() && i < after[depth].size(); ++i) {
      if (before[depth][i] != after[depth][i]) {
        changed.emplace_back(static_cast<int>(depth), static_cast<int>(i));
      }
    }
  }
  return changed;
}

}  // namespace

GraphNode::GraphNode(std::int64_t id, const FunctionInfo* function, GraphNode* parent,
                     const TensorList& inputs, const RecordContext& context, TensorList& outputs)
    : TreeNode(Kind::Graph, id, function, parent),
      device_(context.device),
      stream_(context.stream) {
  classify_inputs(inputs);
  if (parent != nullptr) {
    liveness_before_ = parent->path_liveness();
    expected_dead_before_ = changed_indices(parent->liveness_after_, liveness_before_);
  }

  TensorList recording_inputs = make_recording_inputs(inputs, context);
  graph_ = std::make_unique<DeviceGraph>(device_);
  ProducerScope producers;  // Note [Which op made an output]
  {
    StreamGuard guard(stream_);
    graph_->begin_capture(stream_, context.pool);
    try {
      outputs = function->wrapped->callable(recording_inputs);
    } catch (...) {
      // End the capture (the stream must not stay capturing, nor routed to the pool), but
      // report the function's error: ending an invalidated CUDA capture fails too, and that
      // error would hide the cause (an out of memory, a host read).
      try {
        graph_->end_capture();
      } catch (const Error&) {
        GROVE_INTERNAL_ASSERT(!graph_->is_capturing(), "a failed capture could not be ended");
      }
      throw;
    }
    graph_->end_capture();
  }
  // The buffers stay reachable through the non-owning input_buffers_; dropping the owning
  // handles returns their blocks to the pool, as the inputs of an eager call would die.
  recording_inputs.clear();
  graph_->replay();  // capture ran nothing: produce this call's outputs

  plan_outputs(inputs, outputs, context);
  for (const OutputPlan& plan : plans_) {
    output_producers_.push_back(producers.producer_of(plan.storage_data));
  }
  // An output that is a view of a copied input is, eagerly, a view of the caller's tensor: hand
  // out that (which also lets the input buffer's block go).
  for (std::size_t i = 0; i < plans_.size(); ++i) {
    if (plans_[i].alias == OutputPlan::Alias::CopiedInput) {
      outputs[i] = view_of_copied_input(plans_[i], inputs);
    }
  }
  liveness_after_ = path_liveness();
  for (std::size_t depth = 0; depth < liveness_after_.size(); ++depth) {
    for (std::size_t i = 0; i < liveness_after_[depth].size(); ++i) {
      if (liveness_after_[depth][i]) live_after_.emplace_back(depth, i);
    }
  }
  checkpoint_ = allocator_for(device_).checkpoint_pool_state(context.pool);
}

void GraphNode::classify_inputs(const TensorList& inputs) {
  const auto& declared_static = function().wrapped->static_input_indices;
  static_addresses_.assign(inputs.size(), nullptr);
  input_buffers_.resize(inputs.size());
  expanded_dims_.resize(inputs.size());
  for (int i = 0; i < static_cast<int>(inputs.size()); ++i) {
    const Tensor& input = inputs[static_cast<std::size_t>(i)];
    if (!input.defined()) continue;
    if (parent() != nullptr && parent()->find_path_output(input)) {
      managed_inputs_.push_back(i);
    } else if (contains(declared_static, i)) {
      static_inputs_.push_back(i);
    } else {
      copied_inputs_.push_back(i);
      for (std::int64_t d = 0; d < input.dim(); ++d) {
        if (input.stride(d) == 0 && input.size(d) > 1) {
          expanded_dims_[static_cast<std::size_t>(i)].push_back(d);
        }
      }
      continue;
    }
    static_addresses_[static_cast<std::size_t>(i)] = tensor_address(input);
  }
}

TensorList GraphNode::make_recording_inputs(const TensorList& inputs,
                                            const RecordContext& context) {
  TensorList recording_inputs = inputs;
  PoolAllocationScope scope(context.stream, context.pool);
  // Copying the caller's inputs into the graph's buffers is the manager's business, not a step
  // of the caller's computation for autograd to refuse (an input may require gradients).
  const autograd::NoGradGuard no_grad;
  for (int i : copied_inputs_) {
    const auto index = static_cast<std::size_t>(i);
    const Tensor& input = inputs[index];
    Tensor buffer = empty_strided(input.sizes(), input.strides(),
                                  TensorOptions(input.dtype()).device(input.device()));
    without_expanded_dims(buffer, expanded_dims_[index])
        .copy_(without_expanded_dims(input, expanded_dims_[index]));
    input_buffers_[index] = non_owning_tensor(
        buffer.storage()->unchecked_data(), buffer.storage()->nbytes(), device_, buffer.dtype(),
        buffer.sizes(), buffer.strides(), buffer.storage_offset());
    recording_inputs[index] = std::move(buffer);
  }
  return recording_inputs;
}

void GraphNode::plan_outputs(const TensorList& inputs, const TensorList& outputs,
                             const RecordContext& context) {
  const PoolRanges pool(device_, context.pool);

  std::unordered_map<const void*, int> first_output_with_storage;
  output_refs_.resize(outputs.size());
  plans_.resize(outputs.size());
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& output = outputs[i];
    OutputPlan& plan = plans_[i];
    if (!output.defined()) {
      plan.alias = OutputPlan::Alias::Undefined;
      continue;
    }
    GROVE_CHECK(output.device() == device_, "recording '", function().label(), "': output ", i,
                " is on ", output.device(), " but the graph records on ", device_);
    plan.storage_data = output.storage()->unchecked_data();
    plan.storage_nbytes = output.storage()->nbytes();
    plan.sizes = output.sizes();
    plan.strides = output.strides();
    plan.storage_offset = output.storage_offset();
    plan.dtype = output.dtype();

    std::optional<PathIndex> prior;
    if (parent() != nullptr) prior = parent()->find_live_path_output(output);
    auto static_match = std::find_if(static_inputs_.begin(), static_inputs_.end(), [&](int k) {
      return inputs[static_cast<std::size_t>(k)].storage() == output.storage();
    });
    auto same_call = first_output_with_storage.find(plan.storage_data);
    auto copied_match = std::find_if(copied_inputs_.begin(), copied_inputs_.end(), [&](int k) {
      return input_buffers_[static_cast<std::size_t>(k)].storage()->unchecked_data() ==
             plan.storage_data;
    });

    if (plan.storage_data == nullptr) {
      plan.alias = OutputPlan::Alias::Empty;
    } else if (static_match != static_inputs_.end()) {
      plan.alias = OutputPlan::Alias::StaticInput;
      plan.index = *static_match;
    } else if (copied_match != copied_inputs_.end()) {
      // Eagerly this output is a view of the caller's input, so it is rebuilt as one.
      plan.alias = OutputPlan::Alias::CopiedInput;
      plan.index = *copied_match;
    } else if (prior) {
      plan.alias = OutputPlan::Alias::PriorPathOutput;
      plan.prior = *prior;
      track_output(i, output.storage());
    } else if (same_call != first_output_with_storage.end()) {
      plan.alias = OutputPlan::Alias::SameCallOutput;
      plan.index = same_call->second;
      track_output(i, output.storage());
    } else {
      GROVE_CHECK(pool.contains(plan.storage_data), "recording '", function().label(), "': output ",
                  i, " (at ", format_pointer(plan.storage_data),
                  ") was neither allocated by the "
                  "function nor is it a static input; a replay could not keep it valid. List "
                  "the tensor it comes from in static_input_indices, or return a clone().");
      plan.alias = OutputPlan::Alias::NewStorage;
      first_output_with_storage.emplace(plan.storage_data, static_cast<int>(i));
      track_output(i, output.storage());
    }
  }
}

InvariantStatus GraphNode::check_invariants(const TensorList& inputs) const {
  for (int i : managed_inputs_) {
    const auto index = static_cast<std::size_t>(i);
    if (!inputs[index].defined() || tensor_address(inputs[index]) != static_addresses_[index]) {
      return InvariantStatus::ManagedInputMoved;
    }
  }
  for (const auto& [depth, i] : expected_dead_before_) {
    if (!path()[static_cast<std::size_t>(depth)]
             ->output_refs()[static_cast<std::size_t>(i)]
             .expired()) {
      return InvariantStatus::ExpectedDeadAreLive;
    }
  }
  for (int i : static_inputs_) {
    const auto index = static_cast<std::size_t>(i);
    if (!inputs[index].defined() || tensor_address(inputs[index]) != static_addresses_[index]) {
      return InvariantStatus::StaticInputMoved;
    }
  }
  return InvariantStatus::Success;
}

std::string GraphNode::describe_mismatch(InvariantStatus status, const TensorList& inputs) const {
  if (status == InvariantStatus::ExpectedDeadAreLive) {
    return str("outputs that were dead when graph node ", id(), " was recorded are alive now");
  }
  const bool managed = status == InvariantStatus::ManagedInputMoved;
  const std::vector<int>& indices = managed ? managed_inputs_ : static_inputs_;
  const std::vector<std::string>& names = function().wrapped->input_names;
  std::vector<std::string> moved;
  for (int i : indices) {
    const auto index = static_cast<std::size_t>(i);
    const void* now = inputs[index].defined() ? tensor_address(inputs[index]) : nullptr;
    if (now == static_addresses_[index]) continue;
    const bool named = index < names.size() && !names[index].empty();
    moved.push_back(str("input ", i, named ? str(" ('", names[index], "')") : std::string(),
                        " from ", format_pointer(static_addresses_[index]), " to ",
                        format_pointer(now)));
  }
  if (moved.empty()) return "no mismatch";
  std::string text =
      str(managed ? "graph-managed" : "static", " input", moved.size() > 1 ? "s" : "", " moved: ");
  for (std::size_t k = 0; k < moved.size(); ++k) text += (k > 0 ? "; " : "") + moved[k];
  return text;
}

bool GraphNode::all_outputs_are_dead() const {
  for (const auto& [depth, i] : live_after_) {
    if (!path()[static_cast<std::size_t>(depth)]
             ->output_refs()[static_cast<std::size_t>(i)]
             .expired()) {
      return false;
    }
  }
  return true;
}

TensorList GraphNode::replay(const TensorList& inputs) {
  // Inputs used in place must not be poisoned handles: data_ptr() throws their message.
  const InternalDataAccess check;  // not a host access (Note [Host reads during a trace])
  for (int i : managed_inputs_) inputs[static_cast<std::size_t>(i)].data_ptr();
  for (int i : static_inputs_) inputs[static_cast<std::size_t>(i)].data_ptr();
  {
    // On the caller's stream: Note [The caller's stream and the manager's stream].
    const autograd::NoGradGuard no_grad;  // as in make_recording_inputs
    for (int i : copied_inputs_) {
      const auto index = static_cast<std::size_t>(i);
      if (expanded_dims_[index].empty()) {
        input_buffers_[index].copy_(inputs[index]);
      } else {
        without_expanded_dims(input_buffers_[index], expanded_dims_[index])
            .copy_(without_expanded_dims(inputs[index], expanded_dims_[index]));
      }
    }
    graph_->replay_on(current_stream(device_));
  }
  // The replay wrote the inputs the function mutates: bump their versions, as eager ops would,
  // so that autograd's saved-tensor checks see the change.
  for (int i : function().mutated_inputs) {
    const Tensor& input = inputs[static_cast<std::size_t>(i)];
    if (input.defined()) input.bump_version();
  }
  return reconstruct_outputs(inputs);
}

TensorList GraphNode::reconstruct_outputs(const TensorList& inputs) {
  TensorList outputs(plans_.size());
  for (std::size_t i = 0; i < plans_.size(); ++i) {
    const OutputPlan& plan = plans_[i];
    StoragePtr storage;
    switch (plan.alias) {
      case OutputPlan::Alias::Undefined:
        continue;
      case OutputPlan::Alias::Empty:
        storage = Storage::wrap(DataPtr(nullptr, device_), 0);
        break;
      case OutputPlan::Alias::StaticInput:
        storage = inputs[static_cast<std::size_t>(plan.index)].storage();
        break;
      case OutputPlan::Alias::CopiedInput:
        outputs[i] = view_of_copied_input(plan, inputs);
        continue;
      case OutputPlan::Alias::SameCallOutput:
        storage = outputs[static_cast<std::size_t>(plan.index)].storage();
        break;
      case OutputPlan::Alias::PriorPathOutput: {
        TreeNode* prior_node = path()[static_cast<std::size_t>(plan.prior.first)];
        const auto prior_index = static_cast<std::size_t>(plan.prior.second);
        storage = prior_node->output_refs()[prior_index].lock();
        if (!storage) {
          // The earlier output died since; its memory is the pool's, so hand out a new handle
          // and track it there again.
          storage = Storage::wrap(DataPtr(plan.storage_data, device_), plan.storage_nbytes);
          prior_node->track_output(prior_index, storage);
        }
        break;
      }
      case OutputPlan::Alias::NewStorage:
        storage = Storage::wrap(DataPtr(plan.storage_data, device_), plan.storage_nbytes);
        break;
    }
    if (plan.alias != OutputPlan::Alias::StaticInput && plan.alias != OutputPlan::Alias::Empty) {
      track_output(i, storage);
    }
    outputs[i] = Tensor(IntrusivePtr<TensorImpl>::make(std::move(storage), plan.dtype, plan.sizes,
                                                       plan.strides, plan.storage_offset));
  }
  return outputs;
}

}  // namespace grove::graphs
