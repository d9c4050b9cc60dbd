// ManagedFunction handles and what happens when the last one of a function goes away.
// See Note [Releasing managed functions] in tree_manager.h.
#include <cstdio>
#include <mutex>

#include "graphs/tree/tree_manager.h"

namespace grove::graphs {

// The part of a manager its handles may reach from any thread: whether it still exists, and
// the functions whose last handle died on another thread (released at the manager's next call).
struct TreeManager::Lifeline {
  std::mutex mutex;
  bool alive = true;
  std::thread::id thread;
  std::vector<int> released_elsewhere;
};

struct ManagedFunction::Handle {
  TreeManager* manager;
  std::shared_ptr<TreeManager::Lifeline> lifeline;
  int added_id;

  Handle(TreeManager* manager, std::shared_ptr<TreeManager::Lifeline> lifeline, int added_id)
      : manager(manager), lifeline(std::move(lifeline)), added_id(added_id) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() {
    std::unique_lock<std::mutex> lock(lifeline->mutex);
    if (!lifeline->alive) return;
    if (std::this_thread::get_id() != lifeline->thread) {
      lifeline->released_elsewhere.push_back(added_id);
      return;
    }
    // On the manager's thread the manager cannot be destroyed while this runs.
    lock.unlock();
    try {
      manager->release_function(added_id);
    } catch (const Error& error) {
      std::fprintf(stderr, "grove: error while releasing a managed function: %s\n", error.what());
    }
  }
};

TensorList ManagedFunction::operator()(TensorList inputs, std::source_location where) const {
  GROVE_CHECK(handle_ != nullptr,
              "this ManagedFunction is empty; get one from "
              "TreeManager::add_function");
  {
    std::lock_guard<std::mutex> lock(handle_->lifeline->mutex);
    GROVE_CHECK(handle_->lifeline->alive,
                "this ManagedFunction's tree manager no longer exists (it was "
                "destroyed, or the thread that owned it ended); add the function to a live "
                "manager");
  }
  return handle_->manager->run(handle_->added_id, std::move(inputs), where);
}

int ManagedFunction::id() const {
  return handle_ == nullptr ? -1 : handle_->added_id;
}

std::shared_ptr<TreeManager::Lifeline> TreeManager::make_lifeline() {
  auto lifeline = std::make_shared<Lifeline>();
  lifeline->thread = std::this_thread::get_id();
  return lifeline;
}

void TreeManager::cut_lifeline() {
  std::lock_guard<std::mutex> lock(lifeline_->mutex);
  lifeline_->alive = false;
}

ManagedFunction TreeManager::add_function(WrappedFunction function) {
  const int added_id = functions_.add(std::move(function));
  ++live_functions_;
  return ManagedFunction(
      std::make_shared<const ManagedFunction::Handle>(this, lifeline_, added_id));
}

void TreeManager::release_functions_released_elsewhere() {
  if (running_ > 0) return;
  std::vector<int> released;
  {
    std::lock_guard<std::mutex> lock(lifeline_->mutex);
    released.swap(lifeline_->released_elsewhere);
  }
  released.insert(released.end(), deferred_releases_.begin(), deferred_releases_.end());
  deferred_releases_.clear();
  for (int added_id : released) release_function(added_id);
}

void TreeManager::release_function(int added_id) {
  if (running_ > 0) {
    // A handle died inside a managed call (in a function's body, say): finish the call first.
    deferred_releases_.push_back(added_id);
    return;
  }
  AddedFunction& added = functions_.added(added_id);
  if (added.released) return;
  added.released = true;
  --live_functions_;
  if (live_functions_ == 0) {
    reset_trees();  // frees every tree and the pool, poisoning old outputs still held
  } else {
    free_recordings_of(added_id);
  }
  // The closure goes last: it may hold handles of other functions, released right here.
  Callable body = std::move(added.wrapped.callable);
  added.wrapped.callable = nullptr;
}

void TreeManager::free_recordings_of(int added_id) {
  std::set<int> ids;  // the FunctionInfo ids of its signatures
  for (const FunctionInfo& function : functions_.functions()) {
    if (function.added_id == added_id) ids.insert(function.id);
  }
  if (current_ != nullptr) {
    for (const TreeNode* node : current_->path()) {
      if (ids.contains(node->function().id)) {
        end_generation();  // the path runs through a node about to go
        break;
      }
    }
  }
  // Erases the function's nodes (with their subtrees) among the children of `nodes`, deep.
  auto erase_in = [&](auto& self,
                      std::map<int, std::vector<std::unique_ptr<GraphNode>>>& nodes) -> void {
    for (int id : ids) nodes.erase(id);
    for (auto& [function_id, siblings] : nodes) {
      for (std::unique_ptr<GraphNode>& node : siblings) self(self, node->children());
    }
  };
  erase_in(erase_in, roots_);
  const auto of_released = [&](const auto& entry) { return ids.contains(entry.first.second); };
  std::erase_if(mutation_fallbacks_, of_released);
  std::erase_if(capture_failures_, of_released);
  std::erase_if(rerecords_, of_released);
  for (int id : ids) functions_.functions()[static_cast<std::size_t>(id)].warmed_up = false;
}

}  // namespace grove::graphs
