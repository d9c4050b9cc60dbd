// Nodes of the graph trees: WarmupNode (an eager run in the shared pool) and GraphNode (a
// recorded device graph, in graph_node.h), with what they share: a parent, a path from the root
// and weak references to the storages of their outputs.
//
// Ownership: the TreeManager owns root GraphNodes; a GraphNode owns its children; the manager
// owns the chain of WarmupNodes of the current path. Parents are plain pointers: a parent always
// outlives its children, so there are no ownership cycles and no weak-pointer dance.
//
// Liveness: an output is *live* while some Storage handle for it exists. Nodes hold only weak
// references (StorageWeakRef), so they never keep user tensors alive.
#pragma once

#include <cstdint>
#include <optional>
#include <source_location>
#include <string>
#include <utility>
#include <vector>

#include "core/caching_allocator.h"
#include "core/storage.h"
#include "graphs/tree/output_producers.h"
#include "graphs/tree/tree_types.h"

namespace grove::graphs {

// (depth from the root, output index) of an output somewhere on a path.
using PathIndex = std::pair<int, int>;
// For each node of a path, whether each of its outputs is live.
using PathLiveness = std::vector<std::vector<bool>>;

// The address ranges of a pool's segments, to tell memory a function allocated in the pool from
// memory it merely returns (a tensor from its closure, say).
class PoolRanges {
 public:
  PoolRanges(Device device, PoolId pool);
  bool contains(const void* ptr) const;

 private:
  std::vector<std::pair<std::uintptr_t, std::size_t>> ranges_;
};

// What the manager knows about one function (one input signature of a managed callable).
struct FunctionInfo {
  int id = 0;
  int added_id = 0;                          // the add_function call it belongs to
  const WrappedFunction* wrapped = nullptr;  // shared by all signatures of one added function
  int signature_index = 0;                   // 0 for the first signature seen
  std::vector<int> mutated_inputs;           // declared plus detected during warm-up
  bool warmed_up = false;
  bool warned_pending_backward = false;
  bool warned_mutation = false;
  std::string label() const;  // "name" or "name#k" for later signatures
};

class TreeNode {
 public:
  enum class Kind : std::uint8_t { Warmup, Graph };

  TreeNode(Kind kind, std::int64_t id, const FunctionInfo* function, TreeNode* parent);
  virtual ~TreeNode() = default;
  TreeNode(const TreeNode&) = delete;
  TreeNode& operator=(const TreeNode&) = delete;

  Kind kind() const { return kind_; }
  std::int64_t id() const { return id_; }
  const FunctionInfo& function() const { return *function_; }
  TreeNode* parent() const { return parent_; }
  // Nodes from the root to this one (inclusive).
  const std::vector<TreeNode*>& path() const { return path_; }
  int depth() const { return static_cast<int>(path_.size()) - 1; }

  // One weak reference per output; an empty one for outputs the tree does not manage
  // (aliases of static inputs, empty tensors, inputs passed through by a warm-up).
  const std::vector<StorageWeakRef>& output_refs() const { return output_refs_; }
  std::size_t num_live_outputs() const;
  // Tracks output `index` through `storage`, which the recording made or a replay handed out
  // as a new handle over the same memory, and marks it lent:
  // Note [Memory lent by a graph pool] in core/storage.h.
  void track_output(std::size_t index, const StoragePtr& storage) {
    storage->mark_lent();
    output_refs_[index] = StorageWeakRef(storage);
  }

  // The op that made output `index` (Note [Which op made an output]), or "" if unknown.
  const std::string& output_producer(std::size_t index) const;
  // Where the outputs handed out last by this node were asked for: the source location of the
  // top-level call that ran it (its warm-up, recording or latest replay).
  const std::source_location& call_site() const { return call_site_; }
  void set_call_site(const std::source_location& where) { call_site_ = where; }

  // Live output storages of the whole path, each once.
  std::vector<StoragePtr> path_live_storages() const;
  virtual bool all_outputs_are_dead() const;
  // Liveness of every output of every node on the path.
  PathLiveness path_liveness() const;
  // If `tensor` lives in the memory of an output recorded on this path (live or not), where.
  std::optional<PathIndex> find_path_output(const Tensor& tensor) const;
  // Like find_path_output, but only for outputs that are live now.
  std::optional<PathIndex> find_live_path_output(const Tensor& tensor) const;

 protected:
  std::vector<StorageWeakRef> output_refs_;
  std::vector<std::string> output_producers_;  // per output; may be shorter
  std::source_location call_site_;

 private:
  Kind kind_;
  std::int64_t id_;
  const FunctionInfo* function_;
  TreeNode* parent_;
  std::vector<TreeNode*> path_;
};

// The first runs of a function: eager, with allocations in the shared pool. A warm-up node may
// follow a graph node or a warm-up node, but only warm-up nodes follow it (its outputs have no
// stable addresses to record against).
class WarmupNode final : public TreeNode {
 public:
  WarmupNode(std::int64_t id, const FunctionInfo* function, TreeNode* parent)
      : TreeNode(Kind::Warmup, id, function, parent) {}
  // Remembers which outputs were made in the pool (not inputs passed through, not outputs of
  // earlier nodes). Throws for an output that is none of these (memory the trees cannot own).
  void track_outputs(const TensorList& inputs, const TensorList& outputs, const PoolRanges& pool,
                     const ProducerScope& producers);
};

// Start of a tensor's element 0, without the access check (for address comparisons).
const void* tensor_address(const Tensor& tensor);

}  // namespace grove::graphs
