// TreeManager's paths and memory: ending the current path or generation (poisoning the
// outputs still held), restoring the pool from a checkpoint, pool accounting and reset_trees.
// See tree_manager.h and Note [Checkpointing a private pool] in core/caching_allocator.h.
#include <algorithm>
#include <set>

#include "core/format.h"
#include "graphs/explain.h"
#include "graphs/tree/generation.h"
#include "graphs/tree/tree_manager.h"

namespace grove::graphs {
namespace {

// ", returned by the call at tree_generation_test.cpp:40" (the file's name without its folders).
std::string call_site(const TreeNode& node) {
  const std::source_location& where = node.call_site();
  if (where.line() == 0) return "";
  const std::string_view file = where.file_name();
  const std::size_t slash = file.find_last_of("/\\");
  return str(", returned by the call at ",
             slash == std::string_view::npos ? file : file.substr(slash + 1), ":", where.line());
}

}  // namespace

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
  std::string poisoned;  // for the explain line
  for (const TreeNode* node : current_->path()) {
    const auto& refs = node->output_refs();
    for (std::size_t i = 0; i < refs.size(); ++i) {
      StoragePtr storage = refs[i].lock();
      if (!storage || !done.insert(storage.get()).second) continue;
      const std::string& producer = node->output_producer(i);
      storage->set_access_error(str(
          "this tensor is output ", i, " of graphed function '", node->function().label(), "' (",
          node->kind() == TreeNode::Kind::Graph ? "graph" : "warm-up", " node ", node->id(),
          producer.empty() ? std::string() : str(", made by op '", producer, "'"), call_site(*node),
          ") from an earlier step, and a later call has since reused its memory. "
          "Keep an output across calls by clone()-ing it before the next call, or call "
          "graphs::mark_step_begin() before each iteration so that steps end where you say."));
      storage->free_and_remove_deleter();
      ++counters_.poisoned_outputs;
      count_event(GraphEvent::PoisonedOutput);
      if (explaining()) {
        poisoned += str(poisoned.empty() ? "" : ", ", "output ", i, " of '",
                        node->function().label(), "' (node ", node->id(), ")");
      }
    }
  }
  ++counters_.generations;
  count_event(GraphEvent::Generation);
  if (explaining()) {
    explain(str("generation ended: ", poisoned.empty()
                                          ? std::string("no output of it was still held")
                                          : "poisoned the outputs still held: " + poisoned));
  }
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

void TreeManager::apply_checkpoint(const std::string& why) {
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
  count_event(GraphEvent::Checkpoint);
  if (explaining()) {
    explain(str("checkpoint restore: the pool goes back to its state after graph node ", node->id(),
                ", because ", why));
  }
  check_pool("after restoring a checkpoint");
}

std::string TreeManager::describe_pool() const {
  std::size_t segments = 0, reserved = 0, allocated = 0;
  for (const SegmentInfo& segment : allocator_for(device_).snapshot(pool_)) {
    ++segments;
    reserved += segment.size;
    for (const BlockInfo& block : segment.blocks) allocated += block.allocated ? block.size : 0;
  }
  return str(pool_, ": ", segments, " segments, ", format_bytes(reserved), " reserved, ",
             format_bytes(allocated), " of it allocated to live outputs");
}

void TreeManager::rethrow_out_of_memory(const OutOfMemoryError& error, const char* doing,
                                        const FunctionInfo& function) const {
  GROVE_THROW(OutOfMemoryError, error.message(), "\n  while ", doing, " graphed function '",
              function.label(), "' in the graph pool of the ", device_, " tree manager (",
              describe_pool(), "; ", num_graph_nodes(),
              " recorded graphs share it). The manager is as it was before this call: call "
              "again once memory is free. Graph pools keep their memory while their graphs may "
              "replay; dropping compiled functions you no longer call gives theirs back.");
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

}  // namespace grove::graphs
