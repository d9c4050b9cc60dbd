// TreeManager: the state machine that decides, per call, between warm-up, recording, replay and
// eager fallback. See tree_manager.h; the reference design is PyTorch's cudagraph_trees.py.
// Elsewhere: the fallbacks (tree_fallback.cpp), ending paths and the pool's memory
// (tree_paths.cpp), handles and releasing functions (managed_function.cpp), the per-signature
// function cache (function_cache.cpp).
#include "graphs/tree/tree_manager.h"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "graphs/explain.h"
#include "graphs/tree/generation.h"
#include "graphs/tree/pool_scope.h"

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

TreeManager::TreeManager(Device device, TreeOptions options)
    : device_(device),
      options_(options),
      thread_(std::this_thread::get_id()),
      stream_(new_stream(device, "graph-tree managers")),
      pool_stream_(stream_),
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
    // The next holder of the stream (and of its cuBLAS workspace, which the graphs' products
    // used wherever they were replayed) starts after the last replay.
    if (!device_.is_cpu() && pool_stream_ != stream_) wait_stream(stream_, pool_stream_);
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

TensorList TreeManager::run(int added_id, TensorList inputs, const std::source_location& where) {
  GROVE_CHECK(std::this_thread::get_id() == thread_,
              "a managed function must be called on the "
              "thread whose tree manager created it (managers are per device and per thread)");
  release_functions_released_elsewhere();
  const ExplainScope explain_scope(options_.explain ? ExplainLevel::On : ExplainLevel::Off);
  AddedFunction& added = functions_.added(added_id);
  const FunctionMode mode = added.wrapped.mode;
  InvocationScope scope(/*advances_generation=*/mode != FunctionMode::Backward);
  if (!scope.is_top_level()) {
    // Called from inside another managed function: part of that function's work.
    return added.wrapped.callable(inputs);
  }
  GROVE_CHECK(!is_capturing(current_stream(device_)), "graphed function '", added.wrapped.name,
              "' was called while the caller's stream (", current_stream(device_),
              ") captures a graph; a graphed function records and replays graphs of its own, "
              "which cannot be captured into another. Call it outside the capture, or compile "
              "the whole region as one function (graphs::compile)");
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    GROVE_CHECK(!inputs[i].defined() || inputs[i].device() == device_, "graphed function: input ",
                i, " is on ", inputs[i].device(), " but this tree manager runs on ", device_);
  }
  call_site_ = where;
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
      outputs = run_function(function, inputs);
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

// Note [The caller's stream and the manager's stream]: before a warm-up or a recording.
void TreeManager::wait_for_callers_stream() const {
  if (device_.is_cpu()) return;  // CPU kernels have already run
  const Stream caller = current_stream(device_);
  wait_stream(stream_, caller);
  if (pool_stream_ != caller) wait_stream(stream_, pool_stream_);
}

// After a warm-up or a recording, also when it failed: work already queued on the manager's
// stream may still read the inputs, and the caller's stream must not reuse their blocks before
// it is done.
void TreeManager::wait_for_manager_stream() {
  if (device_.is_cpu()) return;
  const Stream caller = current_stream(device_);
  wait_stream(caller, stream_);
  // Both are ordered after the pool's work now; a stream from new_stream() may be given back.
  pool_stream_ = caller == default_stream(device_) ? caller : stream_;
}

// Before a replay on the caller's stream: the pool's last work may have run on another one.
void TreeManager::order_replay_after_pool_work() {
  if (device_.is_cpu()) return;
  const Stream caller = current_stream(device_);
  if (pool_stream_ != caller) wait_stream(caller, pool_stream_);
}

// After a replay on the caller's stream. The default stream is never given back, so it can be
// waited for later; a stream from new_stream() may be given back and handed to a holder that
// captures, so the manager's stream waits for the replay now (off the caller's path).
void TreeManager::note_replay_on(Stream caller) {
  if (device_.is_cpu()) return;
  if (caller == default_stream(device_)) {
    pool_stream_ = caller;
  } else {
    wait_stream(stream_, caller);
    pool_stream_ = stream_;
  }
}

// Runs `work` (a warm-up, a recording) on the manager's stream, ordered with the caller's.
template <typename Work>
TensorList TreeManager::on_manager_stream(Work work) {
  wait_for_callers_stream();
  TensorList outputs;
  try {
    outputs = work();
  } catch (...) {
    wait_for_manager_stream();
    throw;
  }
  wait_for_manager_stream();
  return outputs;
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
  const bool warmed_up = function.warmed_up || function.wrapped->warmed_up || options_.skip_warmup;
  if (!warmed_up || state_ == PathState::Warmup) {
    if (state_ == PathState::Execution) {
      apply_checkpoint(str("'", function.label(), "' warms up after the replays of this path"));
    }
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
    return on_manager_stream([&] { return warm_up(function, inputs); });
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
      count_event(GraphEvent::Rerecord);
      if (explaining())
        explain(str("re-record '", function.label(), "' because ", rerecord_reason));
      if (count == 1) {
        warn(str("re-recording graphed function '", function.label(), "' because ", rerecord_reason,
                 " (after ", options_.rerecord_limit,
                 " re-recordings at one "
                 "tree position it runs eagerly there)"));
      }
    }
    try_end_execution();
    if (current_ != nullptr) {
      apply_checkpoint(
          str("'", function.label(), "' records a new graph after this path's replays"));
    }
  }
  // The hint was computed when this position was first reached; the inputs that are graph
  // outputs may differ now (or the path ended above), and recording would turn a mutated plain
  // input into a private copy.
  if (std::optional<Fallback> fallback = mutation_fallback(function, inputs)) {
    return run_eagerly(*function.wrapped, function.label(), *fallback, inputs);
  }
  return on_manager_stream([&] { return record(function, inputs); });
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
  try {
    PoolAllocationScope scope(stream_, pool_);
    outputs = function.wrapped->callable(inputs);
  } catch (const OutOfMemoryError& error) {
    // Nothing changed yet: the node was never added (Note [Out of memory in graphed mode]).
    rethrow_out_of_memory(error, "warming up", function);
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
  node->set_call_site(call_site_);
  function.warmed_up = true;
  current_ = node.get();
  warmup_chain_.push_back(std::move(node));
  state_ = PathState::Warmup;
  current_generation_ = generation;
  ++counters_.warmups;
  count_event(GraphEvent::Warmup);
  if (explaining()) {
    explain(str("warm-up '", function.label(), "': ran eagerly in the graph pool (warm-up node ",
                current_->id(), "); a later call of this signature records"));
  }
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
  } catch (const OutOfMemoryError& error) {
    // Not a reason to stop recording this function: see Note [Out of memory in graphed mode].
    check_pool("after a recording that ran out of memory");
    rethrow_out_of_memory(error, "recording", function);
  } catch (const Error& error) {
    // The function cannot be captured (a host read, a synchronisation, ...): remember that, so
    // later calls at this position run eagerly and try again only now and then
    // (Note [Retrying a failed capture] in tree_manager.h). The aborted capture ran nothing and
    // its allocations went back to the pool (Note [Releasing managed functions]).
    check_pool("after a failed capture");
    const Fallback fallback{FallbackReason::CaptureFailed,
                            str("recording '", function.label(), "' threw: ", error.message())};
    CaptureFailure& failure = capture_failures_[{node_key(), function.id}];
    failure.fallback = fallback;
    ++failure.failures;
    failure.eager_calls_left = failure.failures > options_.capture_retry_limit
                                   ? 0
                                   : (std::int64_t{1} << failure.failures) - 1;
    return run_eagerly(*function.wrapped, function.label(), fallback, inputs);
  }
  capture_failures_.erase({node_key(), function.id});
  ++next_graph_id_;
  node->set_call_site(call_site_);
  GraphNode* recorded = node.get();
  siblings_for(function.id).push_back(std::move(node));
  current_ = recorded;
  state_ = PathState::Recording;
  current_generation_ = generation;
  ++counters_.recordings;
  count_event(GraphEvent::Recording);
  if (explaining()) {
    explain(str("record '", function.label(), "' as graph node ", recorded->id(), " (",
                recorded->num_kernels(), " kernels)"));
  }
  check_pool("after a recording");
  return outputs;
}

// The generation is read before the call: a mark_step_begin() inside the function then counts
// as the start of the next step.
TensorList TreeManager::execute(GraphNode& node, const TensorList& inputs) {
  const std::uint64_t generation = current_generation();
  order_replay_after_pool_work();
  TensorList outputs = node.replay(inputs);  // may throw (a poisoned input): state unchanged
  note_replay_on(current_stream(device_));
  node.set_call_site(call_site_);
  current_ = &node;
  state_ = PathState::Execution;
  current_generation_ = generation;
  ++counters_.replays;
  count_event(GraphEvent::Replay);
  if (explaining())
    explain(str("replay '", node.function().label(), "' (graph node ", node.id(), ")"));
  return outputs;
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

TreeManager& tree_manager(Device device) {
  thread_local std::map<std::pair<int, int>, std::unique_ptr<TreeManager>> managers;
  auto& slot = managers[{static_cast<int>(device.type), device.index}];
  if (!slot) slot = std::make_unique<TreeManager>(device);
  return *slot;
}

}  // namespace grove::graphs
