// GraphNode: one recording of one function into a DeviceGraph, as a node of a graph tree.
//
// Recording (the constructor): non-static inputs are copied into buffers allocated in the
// shared pool; the function is captured on the manager's stream into the pool; the graph is
// replayed once to produce the outputs (capture does not run kernels); how each output aliases
// memory is worked out; and the pool's layout is checkpointed
// (Note [Checkpointing a private pool] in core/caching_allocator.h).
//
// Replay (replay()): copy the new non-static inputs into the buffers, launch the graph, and hand
// out fresh tensor handles over the output memory. Handles are new on every replay so that a
// handle kept from an earlier step can be poisoned without touching this step's outputs (see
// Note [Fresh output handles on every replay] in tree_manager.h).
//
// Invariants checked before a replay (check_invariants): graph-managed inputs and static inputs
// are at their recorded addresses, and the outputs that died between the parent's recording and
// this one are dead again. Otherwise the manager records a new child.
#pragma once

#include <map>
#include <memory>

#include "core/caching_allocator.h"
#include "core/device_graph.h"
#include "graphs/tree/tree_node.h"

namespace grove::graphs {

enum class InvariantStatus : std::uint8_t {
  Success,
  ManagedInputMoved,    // an input that is an earlier graph's output is at another address
  StaticInputMoved,     // a static input (parameter) is at another address
  ExpectedDeadAreLive,  // outputs that were dead when this node was recorded are alive now
};

// How one output is rebuilt on replay.
struct OutputPlan {
  enum class Alias : std::uint8_t {
    Undefined,        // the function returned an undefined tensor
    Empty,            // zero bytes: nothing to manage
    NewStorage,       // memory this graph allocated (tracked for liveness)
    SameCallOutput,   // shares storage with an earlier output of the same call (`index`)
    PriorPathOutput,  // shares storage with a live output of an earlier node (`prior`)
    StaticInput,      // a view of static input `index` (a parameter): never managed
    CopiedInput,      // a view of copied input `index`: rebuilt over the caller's tensor
  };
  Alias alias = Alias::NewStorage;
  int index = -1;
  PathIndex prior{-1, -1};
  void* storage_data = nullptr;
  std::size_t storage_nbytes = 0;
  DimVector sizes;
  DimVector strides;
  std::int64_t storage_offset = 0;
  DType dtype = DType::Float32;
};

// Where and how a node records.
struct RecordContext {
  Device device;
  Stream stream;
  PoolId pool;
};

class GraphNode final : public TreeNode {
 public:
  // Records `function` on `inputs` under `parent` (null for a root) and returns the outputs of
  // the recording through `outputs`.
  GraphNode(std::int64_t id, const FunctionInfo* function, GraphNode* parent,
            const TensorList& inputs, const RecordContext& context, TensorList& outputs);

  InvariantStatus check_invariants(const TensorList& inputs) const;
  // A sentence naming what broke an invariant: every input that moved (index, name from
  // WrappedFunction::input_names, old and new address), or the outputs that came back to life.
  std::string describe_mismatch(InvariantStatus status, const TensorList& inputs) const;
  // Copies the inputs that need it and replays the graph, on the calling thread's current
  // stream (the caller orders it: Note [The caller's stream and the manager's stream]).
  TensorList replay(const TensorList& inputs);

  bool all_outputs_are_dead() const override;
  const PoolState& checkpoint() const { return checkpoint_; }
  const std::vector<OutputPlan>& output_plans() const { return plans_; }
  // Inputs used in place because they are outputs of earlier graphs on the path.
  const std::vector<int>& managed_inputs() const { return managed_inputs_; }
  std::size_t num_kernels() const { return graph_->num_nodes(); }

  std::map<int, std::vector<std::unique_ptr<GraphNode>>>& children() { return children_; }
  const std::map<int, std::vector<std::unique_ptr<GraphNode>>>& children() const {
    return children_;
  }

 private:
  void classify_inputs(const TensorList& inputs);
  TensorList make_recording_inputs(const TensorList& inputs, const RecordContext& context);
  void plan_outputs(const TensorList& inputs, const TensorList& outputs,
                    const RecordContext& context);
  TensorList reconstruct_outputs(const TensorList& inputs);

  std::unique_ptr<DeviceGraph> graph_;
  Device device_;
  Stream stream_;
  std::vector<const void*> static_addresses_;  // per input; null unless static or managed
  std::vector<int> managed_inputs_;
  std::vector<int> static_inputs_;     // declared static, not managed
  std::vector<int> copied_inputs_;     // neither: copied into input_buffers_
  std::vector<Tensor> input_buffers_;  // per input; non-owning views of pool memory
  std::vector<std::vector<std::int64_t>> expanded_dims_;  // per input: stride-0 dims
  PathLiveness liveness_before_;
  PathLiveness liveness_after_;
  std::vector<PathIndex> expected_dead_before_;
  std::vector<PathIndex> live_after_;
  std::vector<OutputPlan> plans_;
  PoolState checkpoint_;
  std::map<int, std::vector<std::unique_ptr<GraphNode>>> children_;
};

}  // namespace grove::graphs
