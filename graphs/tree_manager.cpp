// TreeManager: the state machine that decides, per call, between warm-up, recording, replay and
// eager fallback. See tree_manager.h; the reference design is PyTorch's cudagraph_trees.py.
#include "graphs/tree_manager.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <set>

#include "graphs/generation.h"
#include "graphs/pool_scope.h"

namespace grove::graphs {

namespace {

bool contains(const std::vector<int>& values, int value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

}  // namespace

const char* state_name(PathState state) {
  switch (state) {
    case PathState::None:
      return "none";
    case PathState::Warmup:
      return "warm-up";
    case PathState::Recording:
      return "recording";
    case PathState::Execution:
      return "execution";
  }
  return "?";
}

const char* fallback_reason_name(FallbackReason reason) {
  switch (reason) {
    case FallbackReason::DynamicShapes:
      return "dynamic shapes";
    case FallbackReason::UncapturedSize:
      return "uncaptured size";
    case FallbackReason::MutatedInput:
      return "mutated inputs";
    case FallbackReason::MutatedGraphOutput:
      return "mutated graph output";
    case FallbackReason::CaptureFailed:
      return "capture failed";
    case FallbackReason::RerecordLimit:
      return "re-record limit";
    case FallbackReason::WarmupChainLimit:
      return "warm-up chain limit";
  }
  return "?";
}

TreeManager::TreeManager(Device device, TreeOptions options)
    : device_(device),
      options_(options),
      thread_(std::this_thread::get_id()),
      stream_(new_stream(device, "graph-tree managers")),
      lifeline_(make_lifeline()) {
  try {
    pool_ = allocator_for(device).create_pool();
  } catch (...) {
    release_stream(stream_);
    throw;
  }
}

// See Note [A tree manager gives back what it holds] in tree_manager.h.
TreeManager::~TreeManager() {
  cut_lifeline();  // handles that die from now on leave the manager alone
  try {
    reset_trees();
    allocator_for(device_).release_pool(pool_);
  } catch (const Error& error) {
    std::fprintf(stderr, "grove: error while destroying a tree manager: %s\n", error.what());
  }
  try {
    release_stream(stream_);
  } catch (const Error& error) {
    std::fprintf(stderr, "grove: error while giving back a tree manager's stream: %s\n",
                 error.what());
  }
}

std::optional<std::int64_t> TreeManager::current_node_id() const {
  if (current_ == nullptr) return std::nullopt;
  return current_->id();
}

std::int64_t TreeManager::node_key() const {
  return current_ == nullptr ? std::numeric_limits<std::int64_t>::min() : current_->id();
}

bool TreeManager::in_new_invocation() const {
  return current_generation_ != current_generation();
}

bool TreeManager::can_start_new_generation() const {
  if (!in_new_invocation()) return false;
  return user_marked_steps() || !backward_still_pending();
}

bool TreeManager::backward_still_pending() const {
  // A forward whose outputs all died can never get its backward: do not wait for it.
  if (!pending_backwards_) return false;
  for (const StorageWeakRef& output : pending_forward_outputs_) {
    if (!output.expired()) return true;
  }
  return pending_forward_outputs_.empty();
}

// --- the call path ---

TensorList TreeManager::run(int added_id, TensorList inputs) {
  GROVE_CHECK(std::this_thread::get_id() == thread_,
              "a managed function must be called on the "
              "thread whose tree manager created it (managers are per device and per thread)");
  release_functions_released_elsewhere();
  AddedFunction& added = functions_.added(added_id);
  const FunctionMode mode = added.wrapped.mode;
  InvocationScope scope(/*advances_generation=*/mode != FunctionMode::Backward);
  if (!scope.is_top_level()) {
    // Called from inside another managed function: part of that function's work.
    return added.wrapped.callable(inputs);
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    GROVE_CHECK(!inputs[i].defined() || inputs[i].device() == device_, "graphed function: input ",
                i, " is on ", inputs[i].device(), " but this tree manager runs on ", device_);
  }
  ++running_;
  TensorList outputs;
  try {
    if (!size_is_captured(added.wrapped, inputs)) {
      // Not a size to record: eager on the caller's stream, no signature, warm-up or graph.
      outputs = run_eagerly(added.wrapped, added.wrapped.name,
                            {FallbackReason::UncapturedSize,
                             "the sizes of its dynamic_dims are not among its capture_sizes, so "
                             "calls with them run eagerly"},
                            inputs);
    } else {
      FunctionInfo& function = function_for(added_id, inputs);
      wait_for_callers_stream();
      try {
        outputs = run_function(function, inputs);
      } catch (...) {
        // Work already queued on the manager's stream may still read the inputs: the caller's
        // stream must not reuse their blocks before it is done.
        wait_for_manager_stream();
        throw;
      }
      wait_for_manager_stream();
    }
  } catch (...) {
    --running_;
    release_functions_released_elsewhere();
    throw;
  }
  --running_;
  if (mode == FunctionMode::Forward) {
    pending_backwards_ = true;
    for (const Tensor& output : outputs) {
      if (output.defined()) pending_forward_outputs_.emplace_back(output.storage());
    }
  } else if (mode == FunctionMode::Backward) {
    pending_backwards_ = false;
    pending_forward_outputs_.clear();
  }
  release_functions_released_elsewhere();
  return outputs;
}

void TreeManager::wait_for_callers_stream() const {
  if (device_.is_cpu()) return;  // CPU kernels have already run
  wait_stream(stream_, current_stream(device_));
}

void TreeManager::wait_for_manager_stream() const {
  if (device_.is_cpu()) return;
  wait_stream(current_stream(device_), stream_);
}

FunctionInfo& TreeManager::function_for(int added_id, const TensorList& inputs) {
  bool is_new = false;
  FunctionInfo& function = functions_.function_for(added_id, inputs, is_new);
  AddedFunction& added = functions_.added(added_id);
  const int limit = options_.dynamic_shape_warn_limit;
  if (is_new && limit > 0 && static_cast<int>(added.signatures.size()) > limit &&
      !added.warned_dynamic) {
    added.warned_dynamic = true;
    warn(str("graphed function '", added.wrapped.name, "' has been called with ",
             added.signatures.size(),
             " distinct input signatures (shapes, strides, dtypes); "
             "each gets graphs of its own, which costs recording time and memory. Pad inputs to "
             "a few fixed shapes, list the sizes worth recording in capture_sizes, or set "
             "TreeOptions::skip_dynamic_graphs to run signatures past the first ",
             limit,
             " eagerly (set dynamic_shape_warn_limit = 0 to silence "
             "this warning)."));
  }
  return function;
}

TensorList TreeManager::run_function(FunctionInfo& function, TensorList& inputs) {
  if (state_ == PathState::Recording || state_ == PathState::Warmup) try_end_path(function);

  if (std::optional<Fallback> fallback = eager_fallback(function, inputs)) {
    return run_eagerly(*function.wrapped, function.label(), *fallback, inputs);
  }

  // A warm-up's outputs have no recorded addresses, so after one only warm-ups may follow
  // until the path ends.
  const bool warmed_up = function.warmed_up || options_.skip_warmup;
  if (!warmed_up || state_ == PathState::Warmup) {
    if (state_ == PathState::Execution) apply_checkpoint();
    if (static_cast<int>(warmup_chain_.size()) >= options_.max_warmup_chain) {
      return run_eagerly(
          *function.wrapped, function.label(),
          {FallbackReason::WarmupChainLimit,
           str(warmup_chain_.size(),
               " warm-ups in a row on one path, because outputs of earlier calls are alive and "
               "a forward waits for its backward; run the backward, drop the outputs, or call "
               "graphs::mark_step_begin() before each step")},
          inputs);
    }
    return warm_up(function, inputs);
  }

  if (state_ != PathState::Recording) {
    std::string rerecord_reason;
    for (std::unique_ptr<GraphNode>& child : siblings_for(function.id)) {
      const InvariantStatus status = child->check_invariants(inputs);
      if (status == InvariantStatus::Success) return execute(*child, inputs);
      if (status != InvariantStatus::ExpectedDeadAreLive) {
        rerecord_reason = child->describe_mismatch(status, inputs);
      }
    }
    // No child fits. If the function can start a tree of its own, try ending this path.
    if (current_ != nullptr && roots_.contains(function.id)) {
      try_end_execution();
      if (current_ == nullptr) return run_function(function, inputs);
    }
    // Decide an eager fallback before any re-record bookkeeping: a call that writes to an input
    // the graph would copy runs eagerly, whether or not a recorded sibling exists.
    if (std::optional<Fallback> fallback = mutation_fallback(function, inputs)) {
      return run_eagerly(*function.wrapped, function.label(), *fallback, inputs);
    }
    if (!rerecord_reason.empty()) {
      const int count = ++rerecords_[{node_key(), function.id}];
      if (count > options_.rerecord_limit) {
        const std::string why =
            options_.rerecord_limit == 0
                ? str("re-recording is off (rerecord_limit = 0) and ", rerecord_reason)
                : str("'", function.label(), "' was re-recorded ", options_.rerecord_limit,
                      " times at this tree position; last because ", rerecord_reason);
        return run_eagerly(*function.wrapped, function.label(),
                           {FallbackReason::RerecordLimit, why}, inputs);
      }
      ++counters_.rerecords;
      if (count == 1) {
        warn(str("re-recording graphed function '", function.label(), "' because ", rerecord_reason,
                 " (after ", options_.rerecord_limit,
                 " re-recordings at one "
                 "tree position it runs eagerly there)"));
      }
    }
    try_end_execution();
    if (current_ != nullptr) apply_checkpoint();
  }
  // The hint was computed when this position was first reached; the inputs that are graph
  // outputs may differ now (or the path ended above), and recording would turn a mutated plain
  // input into a private copy.
  if (std::optional<Fallback> fallback = mutation_fallback(function, inputs)) {
    return run_eagerly(*function.wrapped, function.label(), *fallback, inputs);
  }
  return record(function, inputs);
}

std::optional<TreeManager::Fallback> TreeManager::eager_fallback(FunctionInfo& function,
                                                                 const TensorList& inputs) {
  const int limit = options_.dynamic_shape_warn_limit;
  if (options_.skip_dynamic_graphs && limit > 0 && function.signature_index >= limit) {
    return Fallback{FallbackReason::DynamicShapes,
                    str("signature ", function.signature_index + 1, " of '", function.wrapped->name,
                        "' is past the limit of ", limit,
                        " recorded signatures (TreeOptions::skip_dynamic_graphs)")};
  }
  const Position position{node_key(), function.id};
  if (auto failed = capture_failures_.find(position); failed != capture_failures_.end()) {
    return failed->second;
  }
  auto mutation = mutation_fallbacks_.find(position);
  if (mutation == mutation_fallbacks_.end()) {
    mutation = mutation_fallbacks_.emplace(position, mutation_fallback(function, inputs)).first;
  }
  if (mutation->second) return mutation->second;
  auto rerecorded = rerecords_.find(position);
  if (rerecorded != rerecords_.end() && rerecorded->second > options_.rerecord_limit) {
    return Fallback{FallbackReason::RerecordLimit,
                    str("'", function.label(), "' was re-recorded more than ",
                        options_.rerecord_limit, " times at this tree position")};
  }
  return std::nullopt;
}

std::optional<TreeManager::Fallback> TreeManager::mutation_fallback(
    const FunctionInfo& function, const TensorList& inputs) const {
  for (int i : function.mutated_inputs) {
    if (i < 0 || i >= static_cast<int>(inputs.size())) continue;
    const Tensor& input = inputs[static_cast<std::size_t>(i)];
    if (!input.defined() || contains(function.wrapped->static_input_indices, i)) continue;
    if (current_ != nullptr && current_->find_path_output(input)) {
      if (!options_.forbid_graph_output_mutation) continue;
      return Fallback{FallbackReason::MutatedGraphOutput,
                      str("'", function.label(), "' writes to input ", i,
                          ", an output of an earlier graph on this path, and "
                          "TreeOptions::forbid_graph_output_mutation is set, so the function "
                          "runs eagerly")};
    }
    return Fallback{FallbackReason::MutatedInput,
                    str("'", function.label(), "' writes to input ", i,
                        ", which is neither a static input nor an output of an earlier graph on "
                        "this path; a graph would write to its own copy, so the function runs "
                        "eagerly")};
  }
  return std::nullopt;
}

// --- ending paths and generations ---

void TreeManager::try_end_path(FunctionInfo& function) {
  if (can_start_new_generation()) {
    end_generation();
  } else if (current_->all_outputs_are_dead()) {
    clear_path();
  } else {
    warn_pending_backwards(function);
  }
}

void TreeManager::try_end_execution() {
  if (current_ == nullptr) return;
  if (can_start_new_generation()) {
    end_generation();
  } else if (current_->all_outputs_are_dead()) {
    clear_path();
  }
}

void TreeManager::end_generation() {
  std::set<const Storage*> done;
  for (const TreeNode* node : current_->path()) {
    const auto& refs = node->output_refs();
    for (std::size_t i = 0; i < refs.size(); ++i) {
      StoragePtr storage = refs[i].lock();
      if (!storage || !done.insert(storage.get()).second) continue;
      const std::string& producer = node->output_producer(i);
      storage->set_access_error(
          str("this tensor is output ", i, " of graphed function '", node->function().label(),
              "' (", node->kind() == TreeNode::Kind::Graph ? "graph" : "warm-up", " node ",
              node->id(), producer.empty() ? std::string() : str(", made by op '", producer, "'"),
              ") from an earlier step, and a later call has since reused its memory. "
              "Keep an output across calls by clone()-ing it before the next call, or call "
              "graphs::mark_step_begin() before each iteration so that steps end where you say."));
      storage->free_and_remove_deleter();
      ++counters_.poisoned_outputs;
    }
  }
  ++counters_.generations;
  clear_path();
}

void TreeManager::clear_path() {
  current_ = nullptr;
  state_ = PathState::None;
  warmup_chain_.clear();
}

void TreeManager::warn_pending_backwards(FunctionInfo& function) {
  if (function.warned_pending_backward || !in_new_invocation()) return;
  std::vector<const TreeNode*> repeats;
  for (const TreeNode* node : current_->path()) {
    if (node->function().id == function.id) repeats.push_back(node);
  }
  if (repeats.size() <= 1) return;
  // The same function under the same parent again and again: a loop that never replays.
  std::set<int> parent_functions;
  repeats.push_back(current_);
  for (const TreeNode* node : repeats) {
    if (node->parent() != nullptr) parent_functions.insert(node->parent()->function().id);
  }
  if (parent_functions.size() == repeats.size() - 1) return;
  function.warned_pending_backward = true;
  warn(str("graphed function '", function.label(),
           "' cannot reach the fast path (replaying "
           "its graphs): a forward is still waiting for its backward, so each call extends the "
           "current path instead of starting a new step. Run the backward, use "
           "FunctionMode::Inference for calls that have none, or call "
           "graphs::mark_step_begin() before each iteration."));
}

// --- the four ways to run ---

TensorList TreeManager::warm_up(FunctionInfo& function, const TensorList& inputs) {
  std::vector<std::uint64_t> versions(inputs.size(), 0);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].defined()) versions[i] = inputs[i].version();
  }
  const std::uint64_t generation = current_generation();  // before the call, as in execute()
  auto node = std::make_unique<WarmupNode>(next_warmup_id_--, &function, current_);
  TensorList outputs;
  ProducerScope producers;  // Note [Which op made an output]
  {
    PoolAllocationScope scope(stream_, pool_);
    outputs = function.wrapped->callable(inputs);
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const int index = static_cast<int>(i);
    if (!inputs[i].defined() || inputs[i].version() == versions[i] ||
        contains(function.mutated_inputs, index)) {
      continue;
    }
    function.mutated_inputs.push_back(index);
    std::erase_if(mutation_fallbacks_,
                  [&](const auto& entry) { return entry.first.second == function.id; });
    warn(str("graphed function '", function.label(), "' wrote to input ", index,
             " during its warm-up, but that input is not in mutated_input_indices; grove "
             "treats it as mutated from now on (list it to silence this warning)"));
  }
  node->track_outputs(inputs, outputs, PoolRanges(device_, pool_), producers);
  function.warmed_up = true;
  current_ = node.get();
  warmup_chain_.push_back(std::move(node));
  state_ = PathState::Warmup;
  current_generation_ = generation;
  ++counters_.warmups;
  check_pool("after a warm-up");
  return outputs;
}

TensorList TreeManager::record(FunctionInfo& function, const TensorList& inputs) {
  GROVE_INTERNAL_ASSERT(current_ == nullptr || current_->kind() == TreeNode::Kind::Graph,
                        "a recording cannot follow a warm-up node");
  auto* parent = static_cast<GraphNode*>(current_);
  const std::uint64_t generation = current_generation();
  TensorList outputs;
  std::unique_ptr<GraphNode> node;
  try {
    node = std::make_unique<GraphNode>(next_graph_id_, &function, parent, inputs,
                                       RecordContext{device_, stream_, pool_}, outputs);
  } catch (const Error& error) {
    // The function cannot be captured (a host read, a synchronisation, ...): remember that, so
    // later calls at this position run eagerly instead of failing again. The aborted capture ran
    // nothing and its allocations went back to the pool (Note [Releasing managed functions]).
    check_pool("after a failed capture");
    const Fallback fallback{FallbackReason::CaptureFailed,
                            str("recording '", function.label(), "' threw: ", error.message())};
    capture_failures_[{node_key(), function.id}] = fallback;
    return run_eagerly(*function.wrapped, function.label(), fallback, inputs);
  }
  ++next_graph_id_;
  GraphNode* recorded = node.get();
  siblings_for(function.id).push_back(std::move(node));
  current_ = recorded;
  state_ = PathState::Recording;
  current_generation_ = generation;
  ++counters_.recordings;
  check_pool("after a recording");
  return outputs;
}

// The generation is read before the call: a mark_step_begin() inside the function then counts
// as the start of the next step.
TensorList TreeManager::execute(GraphNode& node, const TensorList& inputs) {
  const std::uint64_t generation = current_generation();
  TensorList outputs = node.replay(inputs);  // may throw (a poisoned input): state unchanged
  current_ = &node;
  state_ = PathState::Execution;
  current_generation_ = generation;
  ++counters_.replays;
  return outputs;
}

TensorList TreeManager::run_eagerly(const WrappedFunction& wrapped, const std::string& label,
                                    const Fallback& fallback, const TensorList& inputs) {
  const char* reason = fallback_reason_name(fallback.reason);
  GROVE_CHECK(!options_.or_error, "graphed function '", label, "' cannot run as a graph: ", reason,
              ": ", fallback.why,
              " (TreeOptions::or_error is set, so this is an error instead of an eager fallback)");
  if (warned_fallbacks_.emplace(fallback.reason, label).second) {
    warn(str("running graphed function '", label, "' eagerly: ", reason, ": ", fallback.why));
  }
  ++counters_.eager_fallbacks;
  ++counters_.fallbacks[fallback.reason];
  return wrapped.callable(inputs);
}

void TreeManager::apply_checkpoint() {
  GROVE_INTERNAL_ASSERT(current_ != nullptr && current_->kind() == TreeNode::Kind::Graph,
                        "a checkpoint needs a recorded current node");
  const auto* node = static_cast<const GraphNode*>(current_);
  std::vector<StoragePtr> live = node->path_live_storages();
  std::vector<Storage*> raw;
  std::vector<void*> live_addresses;
  raw.reserve(live.size());
  for (const StoragePtr& storage : live) {
    raw.push_back(storage.get());
    live_addresses.push_back(storage->unchecked_data());
  }
  // Every block the allocator still counts as allocated in the pool must belong to a live path
  // output; anything else is owned by a tensor the trees do not know of (kept in a function's
  // closure, say), and restoring the checkpoint would hand its memory to somebody else.
  CachingAllocator& allocator = allocator_for(device_);
  for (const SegmentInfo& segment : allocator.snapshot(pool_)) {
    for (const BlockInfo& block : segment.blocks) {
      const auto* address = reinterpret_cast<void*>(block.address);
      GROVE_CHECK(!block.allocated || std::find(live_addresses.begin(), live_addresses.end(),
                                                address) != live_addresses.end(),
                  "graph trees: a block of the graph pool (", block.size,
                  " bytes) is held by a "
                  "tensor that is not an output of the current path, for example one kept in a "
                  "graphed function's closure. Graphed functions must return what they allocate "
                  "and keep no tensors from their calls; the graphs cannot keep its memory safe.");
    }
  }
  allocator.set_checkpoint_pool_state(node->checkpoint(), raw);
  ++counters_.checkpoints;
  check_pool("after restoring a checkpoint");
}

// --- helpers ---

std::vector<std::unique_ptr<GraphNode>>& TreeManager::siblings_for(int function_id) {
  if (current_ == nullptr) return roots_[function_id];
  GROVE_INTERNAL_ASSERT(current_->kind() == TreeNode::Kind::Graph,
                        "warm-up nodes have no children");
  return static_cast<GraphNode*>(current_)->children()[function_id];
}

void TreeManager::warn(const std::string& message) {
  warnings_.push_back(message);
  if (options_.print_warnings) std::fprintf(stderr, "grove: warning: %s\n", message.c_str());
}

void TreeManager::check_pool(const char* when) const {
  if (!options_.debug_checks) return;
  std::vector<void*> expected;
  if (current_ != nullptr) {
    for (const StoragePtr& storage : current_->path_live_storages()) {
      expected.push_back(storage->unchecked_data());
    }
  }
  std::string report;
  GROVE_CHECK(allocator_for(device_).check_pool_live_allocations(pool_, expected, &report),
              "graph-tree pool accounting failed ", when, ": ", report,
              ". Memory of the pool is held by something the trees do not track (for example "
              "a tensor kept in a function's closure).");
}

void TreeManager::reset_trees() {
  if (current_ != nullptr) end_generation();
  clear_path();
  roots_.clear();  // destroys every graph node and its device graph
  for (FunctionInfo& function : functions_.functions()) function.warmed_up = false;
  mutation_fallbacks_.clear();
  capture_failures_.clear();
  rerecords_.clear();
  CachingAllocator& allocator = allocator_for(device_);
  allocator.release_pool(pool_);
  pool_ = allocator.create_pool();
}

TreeManager& tree_manager(Device device) {
  thread_local std::map<std::pair<int, int>, std::unique_ptr<TreeManager>> managers;
  auto& slot = managers[{static_cast<int>(device.type), device.index}];
  if (!slot) slot = std::make_unique<TreeManager>(device);
  return *slot;
}

}  // namespace grove::graphs
