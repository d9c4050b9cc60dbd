#include "graphs/tree/tree_node.h"

#include <algorithm>

namespace grove::graphs {

std::string FunctionInfo::label() const {
  return signature_index == 0 ? wrapped->name
                              : wrapped->name + "#" + std::to_string(signature_index);
}

const void* tensor_address(const Tensor& tensor) {
  return static_cast<const char*>(tensor.storage()->unchecked_data()) +
         tensor.storage_offset() * static_cast<std::int64_t>(element_size(tensor.dtype()));
}

TreeNode::TreeNode(Kind kind, std::int64_t id, const FunctionInfo* function, TreeNode* parent)
    : kind_(kind), id_(id), function_(function), parent_(parent) {
  if (parent != nullptr) path_ = parent->path_;
  path_.push_back(this);
}

std::size_t TreeNode::num_live_outputs() const {
  return static_cast<std::size_t>(std::count_if(
      output_refs_.begin(), output_refs_.end(),
      [](const StorageWeakRef& ref) { return ref.data_ptr() != nullptr && !ref.expired(); }));
}

std::vector<StoragePtr> TreeNode::path_live_storages() const {
  std::vector<StoragePtr> live;
  for (const TreeNode* node : path_) {
    for (const StorageWeakRef& ref : node->output_refs_) {
      StoragePtr storage = ref.lock();
      if (!storage) continue;
      if (std::find(live.begin(), live.end(), storage) == live.end()) {
        live.push_back(std::move(storage));
      }
    }
  }
  return live;
}

bool TreeNode::all_outputs_are_dead() const {
  for (const TreeNode* node : path_) {
    for (const StorageWeakRef& ref : node->output_refs_) {
      if (!ref.expired()) return false;
    }
  }
  return true;
}

PathLiveness TreeNode::path_liveness() const {
  PathLiveness liveness;
  liveness.reserve(path_.size());
  for (const TreeNode* node : path_) {
    std::vector<bool> outputs;
    outputs.reserve(node->output_refs_.size());
    for (const StorageWeakRef& ref : node->output_refs_) outputs.push_back(!ref.expired());
    liveness.push_back(std::move(outputs));
  }
  return liveness;
}

std::optional<PathIndex> TreeNode::find_path_output(const Tensor& tensor) const {
  const void* data = tensor.storage()->unchecked_data();
  if (data == nullptr) return std::nullopt;
  for (std::size_t depth = 0; depth < path_.size(); ++depth) {
    const auto& refs = path_[depth]->output_refs_;
    for (std::size_t i = 0; i < refs.size(); ++i) {
      if (refs[i].data_ptr() == data) {
        return PathIndex{static_cast<int>(depth), static_cast<int>(i)};
      }
    }
  }
  return std::nullopt;
}

std::optional<PathIndex> TreeNode::find_live_path_output(const Tensor& tensor) const {
  const void* data = tensor.storage()->unchecked_data();
  if (data == nullptr) return std::nullopt;
  for (std::size_t depth = 0; depth < path_.size(); ++depth) {
    const auto& refs = path_[depth]->output_refs_;
    for (std::size_t i = 0; i < refs.size(); ++i) {
      if (refs[i].data_ptr() == data && !refs[i].expired()) {
        return PathIndex{static_cast<int>(depth), static_cast<int>(i)};
      }
    }
  }
  return std::nullopt;
}

PoolRanges::PoolRanges(Device device, PoolId pool) {
  for (const SegmentInfo& segment : allocator_for(device).snapshot(pool)) {
    ranges_.emplace_back(segment.address, segment.size);
  }
}

bool PoolRanges::contains(const void* ptr) const {
  const auto address = reinterpret_cast<std::uintptr_t>(ptr);
  return std::any_of(ranges_.begin(), ranges_.end(), [&](const auto& range) {
    return address >= range.first && address < range.first + range.second;
  });
}

const std::string& TreeNode::output_producer(std::size_t index) const {
  static const std::string unknown;
  return index < output_producers_.size() ? output_producers_[index] : unknown;
}

void WarmupNode::track_outputs(const TensorList& inputs, const TensorList& outputs,
                               const PoolRanges& pool, const ProducerScope& producers) {
  std::vector<StorageWeakRef> refs;
  refs.reserve(outputs.size());
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& output = outputs[i];
    bool track = output.defined() && output.storage()->unchecked_data() != nullptr;
    for (const Tensor& input : inputs) {
      if (track && input.defined() && input.storage() == output.storage()) track = false;
    }
    // Outputs of earlier nodes passed through are tracked by those nodes already.
    if (track && parent() != nullptr && parent()->find_live_path_output(output)) track = false;
    GROVE_CHECK(!track || pool.contains(output.storage()->unchecked_data()),
                "warm-up of graphed "
                "function '",
                function().label(), "': output ", i,
                " was neither allocated by "
                "the function nor is it one of its inputs (a tensor kept in its closure?); a "
                "graph could not keep it valid. Pass that tensor as an input (a static input "
                "for parameters), or return a clone().");
    if (track) output.storage()->mark_lent();  // Note [Memory lent by a graph pool]
    refs.push_back(track ? StorageWeakRef(output.storage()) : StorageWeakRef());
    output_producers_.push_back(
        output.defined() ? producers.producer_of(output.storage()->unchecked_data()) : "");
  }
  output_refs_ = std::move(refs);
}

}  // namespace grove::graphs
