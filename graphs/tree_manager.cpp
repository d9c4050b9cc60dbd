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

// A callable added with add_function and the input signatures it has been called with.
struct TreeManager::Callable {
  struct Signature {
    std::size_t hash;
    std::vector<std::int64_t> encoded;
    int function_id;
  };
  WrappedFunction wrapped;
  std::vector<Signature> signatures;
  bool warned_dynamic = false;
};

namespace {

// Walks the parts of an input signature: per input, defined-ness, dtype, device, sizes, strides.
template <typename Visit>
void for_each_signature_part(const TensorList& inputs, Visit visit) {
  visit(static_cast<std::int64_t>(inputs.size()));
  for (const Tensor& input : inputs) {
    if (!input.defined()) {
      visit(-1);
      continue;
    }
    visit(static_cast<std::int64_t>(input.dtype()));
    visit(static_cast<std::int64_t>(input.device().type) * 256 + input.device().index);
    visit(input.dim());
    for (std::int64_t size : input.sizes()) visit(size);
    for (std::int64_t stride : input.strides()) visit(stride);
  }
}

std::size_t signature_hash(const TensorList& inputs) {
  std::size_t hash = 0xcbf29ce484222325ULL;
  for_each_signature_part(inputs, [&](std::int64_t part) {
    hash = (hash ^ static_cast<std::size_t>(part)) * 0x100000001b3ULL;
  });
  return hash;
}

bool signature_matches(const std::vector<std::int64_t>& encoded, const TensorList& inputs) {
  std::size_t position = 0;
  bool equal = true;
  for_each_signature_part(inputs, [&](std::int64_t part) {
    equal = equal && position < encoded.size() && encoded[position] == part;
    ++position;
  });
  return equal && position == encoded.size();
}

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

TensorList ManagedFunction::operator()(TensorList inputs) const {
  GROVE_CHECK(manager_ != nullptr,
              "this ManagedFunction is empty; get one from "
              "TreeManager::add_function");
  std::shared_ptr<const bool> alive = manager_alive_.lock();
  GROVE_CHECK(alive != nullptr,
              "this ManagedFunction's tree manager no longer exists (it was "
              "destroyed, or the thread that owned it ended); add the function to a live manager");
  return manager_->run(callable_id_, std::move(inputs));
}

TreeManager::TreeManager(Device device, TreeOptions options)
    : device_(device),
      options_(options),
      thread_(std::this_thread::get_id()),
      stream_(new_stream(device, "graph-tree managers")) {
  try {
    pool_ = allocator_for(device).create_pool();
  } catch (...) {
    release_stream(stream_);
    throw;
  }
}

// See Note [A tree manager gives back what it holds] in tree_manager.h.
TreeManager::~TreeManager() {
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

ManagedFunction TreeManager::add_function(WrappedFunction function) {
  GROVE_CHECK(static_cast<bool>(function.callable), "add_function: the function '", function.name,
              "' has no callable");
  Callable& callable = callables_.emplace_back();
  callable.wrapped = std::move(function);
  return ManagedFunction(this, alive_, static_cast<int>(callables_.size()) - 1);
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

TensorList TreeManager::run(int callable_id, TensorList inputs) {
  GROVE_CHECK(std::this_thread::get_id() == thread_,
              "a managed function must be called on the "
              "thread whose tree manager created it (managers are per device and per thread)");
  Callable& callable = callables_[static_cast<std::size_t>(callable_id)];
  const FunctionMode mode = callable.wrapped.mode;
  InvocationScope scope(/*advances_generation=*/mode != FunctionMode::Backward);
  if (!scope.is_top_level()) {
    // Called from inside another managed function: part of that function's work.
    return callable.wrapped.callable(inputs);
  }
  FunctionInfo& function = function_for(callable_id, inputs);
  wait_for_callers_stream();
  TensorList outputs;
  try {
    outputs = run_function(function, inputs);
  } catch (...) {
    // Work already queued on the manager's stream may still read the inputs: the caller's
    // stream must not reuse their blocks before it is done.
    wait_for_manager_stream();
    throw;
  }
  wait_for_manager_stream();
  if (mode == FunctionMode::Forward) {
    pending_backwards_ = true;
    for (const Tensor& output : outputs) {
      if (output.defined()) pending_forward_outputs_.emplace_back(output.storage());
    }
  } else if (mode == FunctionMode::Backward) {
    pending_backwards_ = false;
    pending_forward_outputs_.clear();
  }
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

FunctionInfo& TreeManager::function_for(int callable_id, const TensorList& inputs) {
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    GROVE_CHECK(!inputs[i].defined() || inputs[i].device() == device_, "graphed function: input ",
                i, " is on ", inputs[i].device(), " but this tree manager runs on ", device_);
  }
  Callable& callable = callables_[static_cast<std::size_t>(callable_id)];
  const std::size_t hash = signature_hash(inputs);
  for (const Callable::Signature& signature : callable.signatures) {
    if (signature.hash == hash && signature_matches(signature.encoded, inputs)) {
      return functions_[static_cast<std::size_t>(signature.function_id)];
    }
  }
  for (const auto* list :
       {&callable.wrapped.static_input_indices, &callable.wrapped.mutated_input_indices}) {
    for (int index : *list) {
      GROVE_CHECK(index >= 0 && index < static_cast<int>(inputs.size()), "graphed function '",
                  callable.wrapped.name, "': input index ", index, " in ",
                  list == &callable.wrapped.static_input_indices ? "static_input_indices"
                                                                 : "mutated_input_indices",
                  " is out of range for a call with ", inputs.size(), " inputs");
    }
  }
  FunctionInfo& function = functions_.emplace_back();
  function.id = static_cast<int>(functions_.size()) - 1;
  function.wrapped = &callable.wrapped;
  function.signature_index = static_cast<int>(callable.signatures.size());
  function.mutated_inputs = callable.wrapped.mutated_input_indices;
  std::vector<std::int64_t> encoded;
  for_each_signature_part(inputs, [&](std::int64_t part) { encoded.push_back(part); });
  callable.signatures.push_back({hash, std::move(encoded), function.id});

  const int limit = options_.dynamic_shape_warn_limit;
  if (limit > 0 && static_cast<int>(callable.signatures.size()) > limit &&
      !callable.warned_dynamic) {
    callable.warned_dynamic = true;
    warn(str("graphed function '", callable.wrapped.name, "' has been called with ",
             callable.signatures.size(),
             " distinct input signatures (shapes, strides, dtypes); "
             "each gets graphs of its own, which costs recording time and memory. Pad inputs to "
             "a few fixed shapes, or set TreeOptions::skip_dynamic_graphs to run signatures "
             "past the first ",
             limit,
             " eagerly (set dynamic_shape_warn_limit = 0 to silence "
             "this warning)."));
  }
  return function;
}

TensorList TreeManager::run_function(FunctionInfo& function, TensorList& inputs) {
  if (state_ == PathState::Recording || state_ == PathState::Warmup) try_end_path(function);

  if (std::string reason = eager_reason(function, inputs); !reason.empty()) {
    return run_eagerly(function, inputs, reason);
  }

  // A warm-up's outputs have no recorded addresses, so after one only warm-ups may follow
  // until the path ends.
  if (!function.warmed_up || state_ == PathState::Warmup) {
    if (state_ == PathState::Execution) apply_checkpoint();
    if (static_cast<int>(warmup_chain_.size()) >= options_.max_warmup_chain) {
      return run_eagerly(function, inputs,
                         str("warm-up chain limit: ", warmup_chain_.size(),
                             " warm-ups in a row "
                             "on one path, because outputs of earlier calls are alive and a "
                             "forward waits for its backward; run the backward, drop the "
                             "outputs, or call graphs::mark_step_begin() before each step"));
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
    if (!rerecord_reason.empty()) {
      const int count = ++rerecords_[{node_key(), function.id}];
      if (count > options_.rerecord_limit) {
        return run_eagerly(function, inputs,
                           str("re-record limit: '", function.label(), "' was re-recorded ",
                               options_.rerecord_limit,
                               " times at this tree position; last "
                               "because ",
                               rerecord_reason));
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
  // outputs may differ now, and recording would turn a mutated plain input into a private copy.
  if (!function.mutated_inputs.empty()) {
    if (std::string reason = mutation_reason(function, inputs); !reason.empty()) {
      return run_eagerly(function, inputs, reason);
    }
  }
  return record(function, inputs);
}

std::string TreeManager::eager_reason(FunctionInfo& function, const TensorList& inputs) {
  const int limit = options_.dynamic_shape_warn_limit;
  if (options_.skip_dynamic_graphs && limit > 0 && function.signature_index >= limit) {
    return str("dynamic shapes: signature ", function.signature_index + 1, " of '",
               function.wrapped->name, "' is past the limit of ", limit,
               " recorded signatures (TreeOptions::skip_dynamic_graphs)");
  }
  const std::pair<std::int64_t, int> key{node_key(), function.id};
  auto hint = mutation_hints_.find(key);
  if (hint == mutation_hints_.end()) {
    hint = mutation_hints_.emplace(key, mutation_reason(function, inputs)).first;
  }
  if (!hint->second.empty()) return hint->second;
  auto rerecorded = rerecords_.find(key);
  if (rerecorded != rerecords_.end() && rerecorded->second > options_.rerecord_limit) {
    return str("re-record limit: '", function.label(), "' was re-recorded more than ",
               options_.rerecord_limit, " times at this tree position");
  }
  return {};
}

std::string TreeManager::mutation_reason(const FunctionInfo& function,
                                         const TensorList& inputs) const {
  for (int i : function.mutated_inputs) {
    if (i < 0 || i >= static_cast<int>(inputs.size())) continue;
    const Tensor& input = inputs[static_cast<std::size_t>(i)];
    if (!input.defined() || contains(function.wrapped->static_input_indices, i)) continue;
    if (current_ != nullptr && current_->find_path_output(input)) continue;
    return str("mutated inputs: '", function.label(), "' writes to input ", i,
               ", which is neither a static input nor an output of an earlier graph on this "
               "path; a graph would write to its own copy, so the function runs eagerly");
  }
  return {};
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
      storage->set_access_error(str(
          "this tensor is output ", i, " of graphed function '", node->function().label(), "' (",
          node->kind() == TreeNode::Kind::Graph ? "graph" : "warm-up", " node ", node->id(),
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
    std::erase_if(mutation_hints_,
                  [&](const auto& hint) { return hint.first.second == function.id; });
    warn(str("graphed function '", function.label(), "' wrote to input ", index,
             " during its warm-up, but that input is not in mutated_input_indices; grove "
             "treats it as mutated from now on (list it to silence this warning)"));
  }
  node->track_outputs(inputs, outputs, PoolRanges(device_, pool_));
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
    // later calls at this position run eagerly instead of failing again.
    std::string reason =
        str("capture failed: recording '", function.label(), "' threw: ", error.message());
    mutation_hints_[{node_key(), function.id}] = reason;
    return run_eagerly(function, inputs, reason);
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

TensorList TreeManager::run_eagerly(FunctionInfo& function, const TensorList& inputs,
                                    const std::string& reason) {
  GROVE_CHECK(!options_.or_error, "graphed function '", function.label(),
              "' cannot run as a graph: ", reason,
              " (TreeOptions::or_error is set, so this is "
              "an error instead of an eager fallback)");
  const std::string kind = reason.substr(0, reason.find(':'));
  if (counters_.fallback_reasons[kind + " (" + function.label() + ")"]++ == 0) {
    warn(str("running graphed function '", function.label(), "' eagerly: ", reason));
  }
  ++counters_.eager_fallbacks;
  return function.wrapped->callable(inputs);
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
  for (FunctionInfo& function : functions_) function.warmed_up = false;
  mutation_hints_.clear();
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
