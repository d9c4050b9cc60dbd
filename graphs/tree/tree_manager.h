// The graph-tree manager: runs managed functions eagerly (warm-up), records them into device
// graphs over one shared private pool, and replays them, arranged in trees of recordings.
//
// How a call goes (TreeManager::run):
//   0. Calls that must run eagerly do so on the caller's stream, each reason logged once per
//      function and counted (TreeCounters::fallbacks by FallbackReason): sizes not among the
//      function's capture_sizes, mutated inputs a graph would copy, a failed capture, limits.
//   1. The first call of a function is a warm-up: it runs eagerly, allocating in the shared
//      pool, as a WarmupNode on the current path (unless TreeOptions::skip_warmup, or the
//      caller ran its work already: WrappedFunction::warmed_up).
//   2. The next call records a GraphNode: non-static inputs are copied into pool buffers, the
//      function is captured, and the graph is replayed once to produce the outputs.
//   3. Later calls replay a recorded child of the current node whose invariants hold. If none
//      does, a new child is recorded (re-recording when static inputs moved), or, when the path
//      may end, a new root.
// A recording made while outputs of the current path are alive becomes a child of the current
// node: the path from the root is what replays together, in order, over one pool.
//
// Generations (generation.h): when a new top-level invocation (or mark_step_begin) starts and no
// forward waits for its backward, the current path ends. Its outputs still held by the user are
// freed and poisoned: touching one throws an error naming the function, the output and the op
// that made it (Note [Which op made an output] in output_producers.h).
//
// Note [Fresh output handles on every replay]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A replay writes its outputs into the same memory every time. PyTorch hands out the same
// cached tensor on every replay, so an output kept from step k silently shows step k+1's values.
// grove hands out new Storage/Tensor handles over that memory on each replay (no device
// allocation, just two small host objects per output) and tracks only the newest ones; when a
// generation ends, the handles still held are poisoned through Storage::set_access_error. An
// old handle therefore either is dead or throws: it never shows newer values.
//
// Note [The caller's stream and the manager's stream]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Warm-ups and recordings run on the manager's own stream (stream()): a capture takes only the
// work of the stream it was begun on, and the caller's stream may hold work of its own. The
// caller makes the inputs and reads the outputs on its current stream, and CUDA streams run
// concurrently: without ordering, a warm-up could read an input before the caller's kernel that
// writes it has run, and the caller could read an output (or free an input's block for reuse)
// before the warm-up has finished. So a warm-up or a recording makes the manager's stream wait
// for the caller's current stream first and the caller's stream wait for the manager's after,
// also when it fails (wait_stream in core/stream.h: an event recorded on one stream and waited
// for on the other; the host never blocks).
// A replay runs on the caller's current stream, input copies included, as a graph captured by
// hand is replayed: the caller's work before it and after it is ordered by the stream itself,
// and a step costs one graph launch. (The two waits, with the gradient copies of
// Note [Writing into the copy's target], made the MLP's whole step 1.07x the same step captured
// by hand on an H200; without both, 0.99x.) The pool's memory, and the cuBLAS workspace of the
// manager's stream that the recorded products use (ops/cuda/blas_handle.h), are what replays,
// warm-ups and recordings share, so the manager keeps a stream ordered after the pool's last
// work (pool_stream_): a replay on another stream, a warm-up or a recording waits for it first.
// After a replay on the default stream that is the default stream itself, waited for only when
// needed; after a replay on a stream from new_stream(), which its holder may give back (and its
// next holder capture), the manager's stream waits for the replay at once. A manager waits for
// its last replay before it gives its own stream back. Eager fallbacks run on the caller's
// stream outside the pool and need no waits. A top-level call while the caller's stream
// captures is refused: its graphs cannot be captured into the caller's.
//
// Note [A tree manager gives back what it holds]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A manager holds, per device, one stream (new_stream), one private pool and its recorded
// graphs. Destroying it frees the graphs, poisons the outputs still held (as reset_trees does),
// releases the pool and gives the stream back (Note [Streams are handed out and given back] in
// core/stream.h), so a process may create and destroy any number of managers. The events that
// order the caller's stream with the manager's belong to the calling thread and go with it.
//
// Note [Releasing managed functions]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// When the last ManagedFunction handle of an added function goes away, the manager frees that
// function's recordings (the nodes of its signatures, with the subtrees below them; if the
// current path runs through one of them, the path's step ends first, as a new step would end it,
// poisoning the outputs still held). When no added function of a manager is left, the manager
// frees all its trees and releases its pool (reset_trees) even though outputs of old calls may
// still be held: those are poisoned, as the reference frees its tree manager once its last
// compiled function dies. The function's closure is destroyed then too. A handle destroyed on
// another thread than the manager's is released at the manager's next call.
//
// Note [Out of memory in graphed mode]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A warm-up and a recording allocate in the manager's pool, and may run out of memory (a device
// that is full, or CachingAllocator::set_memory_limit). That is not a reason to run the function
// eagerly from then on (a capture failure is), so the manager does not fall back: it throws the
// OutOfMemoryError again, its message extended with what was being done, to which function, and
// what the pool holds (its segments, reserved and allocated bytes). A failed call changes
// nothing the next call depends on: no node is added, the path, its state and its live outputs
// are as they were before the call (a recording after replays keeps the checkpoint it restored,
// which is the pool's true state), the aborted capture is ended, and the blocks the call took
// went back to the pool when its tensors died. So once memory is free again (tensors dropped, the
// limit raised), the next call warms up or records as the failed one would have. The pool keeps
// the segments it grew, as it keeps them after any call; they are given back with the pool.
// A replay allocates nothing (its memory was laid out by the recording), so it cannot run out;
// the eager work around it (a compiled function's gradients, an optimizer's step) allocates
// outside the pool and reports out of memory as eager code does.
//
// Capture failures: a function whose recording throws (a host read or a synchronisation while
// capturing, say) runs its body twice on that call: once inside the aborted capture, where its
// kernels are recorded but never run and its allocations go back to the pool, and once eagerly,
// which is the run whose results the caller gets; later calls at that tree position run eagerly
// and try again now and then (Note [Retrying a failed capture]). The aborted capture leaves no data
// behind (its kernels never run, the pool holds nothing of it, checked under debug_checks), but
// side effects of the body outside grove's kernels happen twice, and in-place ops in it bump their
// inputs' version counters during the capture as well.
//
// Note [Retrying a failed capture]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A capture can fail for a reason that passes (another thread's work on the device that a
// capture forbids, a library's lazy initialisation) as well as for one that stays (a host read
// in the function). So a failed capture does not make its tree position eager for the process's
// life: after failure k the next 2^k - 1 calls there run eagerly, and the one after records
// again, up to TreeOptions::capture_retry_limit retries; a failure past them is final. A retry
// costs what the first attempt did (the body runs in the aborted capture, then eagerly); a
// success forgets the failures. Retries are counted (TreeCounters::capture_retries) and
// explained.
//
// Threading: one manager per device per thread (tree_manager(device)); a ManagedFunction must be
// called on the thread whose manager made it. Errors a user can cause throw grove::Error;
// fallbacks to eager are logged once per function with their reason, counted, and can be made
// errors (TreeOptions::or_error).
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <source_location>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/caching_allocator.h"
#include "graphs/tree/function_cache.h"
#include "graphs/tree/graph_node.h"
#include "graphs/tree/tree_types.h"

namespace grove::graphs {

class TreeManager;

// What add_function returns: calling it routes the call through the manager. Copies share one
// handle; when the last copy goes away the function is released
// (Note [Releasing managed functions]). Call it on the manager's thread.
class ManagedFunction {
 public:
  ManagedFunction() = default;
  // `where` is the caller's source location, named by the error of an output kept too long.
  TensorList operator()(TensorList inputs,
                        std::source_location where = std::source_location::current()) const;
  int id() const;

 private:
  friend class TreeManager;
  struct Handle;
  explicit ManagedFunction(std::shared_ptr<const Handle> handle) : handle_(std::move(handle)) {}
  std::shared_ptr<const Handle> handle_;
};

class TreeManager {
 public:
  explicit TreeManager(Device device, TreeOptions options = {});
  ~TreeManager();
  TreeManager(const TreeManager&) = delete;
  TreeManager& operator=(const TreeManager&) = delete;

  ManagedFunction add_function(WrappedFunction function);

  // Frees every tree, graph and pool block; poisons outputs still held. The manager stays
  // usable: the next calls warm up again.
  void reset_trees();

  Device device() const { return device_; }
  PathState state() const { return state_; }
  const TreeOptions& options() const { return options_; }
  TreeOptions& options() { return options_; }
  const TreeCounters& counters() const { return counters_; }
  const std::vector<std::string>& warnings() const { return warnings_; }
  PoolId pool() const { return pool_; }
  Stream stream() const { return stream_; }
  // True while a forward ran, no backward has run since, and some output of those forwards is
  // still alive (a forward whose outputs all died can never get its backward).
  bool pending_backwards() const { return backward_still_pending(); }
  bool can_start_new_generation() const;
  // The current node's id (negative for warm-up nodes), or nullopt when the path is empty.
  std::optional<std::int64_t> current_node_id() const;
  std::size_t num_graph_nodes() const;
  // The recorded trees (roots per function id) and the current node, for tests and tools.
  const std::map<int, std::vector<std::unique_ptr<GraphNode>>>& roots() const { return roots_; }
  const TreeNode* current_node() const { return current_; }

  // The trees as indented text, and as a Graphviz DOT graph.
  std::string dump_text() const;
  std::string dump_dot() const;

 private:
  friend class ManagedFunction;
  // What a ManagedFunction's handle reaches the manager through; see ~Handle.
  struct Lifeline;
  using Position = std::pair<std::int64_t, int>;  // (current node key, function id)
  struct Fallback {
    FallbackReason reason;
    std::string why;
  };

  TensorList run(int added_id, TensorList inputs, const std::source_location& where);
  // See Note [The caller's stream and the manager's stream].
  void wait_for_callers_stream() const;
  void wait_for_manager_stream();
  void order_replay_after_pool_work();
  void note_replay_on(Stream caller);
  template <typename Work>
  TensorList on_manager_stream(Work work);
  TensorList run_function(FunctionInfo& function, TensorList& inputs);
  FunctionInfo& function_for(int added_id, const TensorList& inputs);

  // Lazily ends the current path where that is allowed.
  void try_end_path(FunctionInfo& function);  // after a recording or a warm-up
  void try_end_execution();
  bool in_new_invocation() const;
  bool backward_still_pending() const;
  void end_generation();  // frees and poisons the path's live outputs, clears the path
  void clear_path();

  TensorList warm_up(FunctionInfo& function, const TensorList& inputs);
  TensorList record(FunctionInfo& function, const TensorList& inputs);
  TensorList execute(GraphNode& node, const TensorList& inputs);
  TensorList run_eagerly(const WrappedFunction& wrapped, const std::string& label,
                         const Fallback& fallback, const TensorList& inputs);
  // See Note [Checkpointing a private pool]; `why` is for the explain line.
  void apply_checkpoint(const std::string& why);
  // See Note [Out of memory in graphed mode]: `error` again, naming the call and the pool.
  [[noreturn]] void rethrow_out_of_memory(const OutOfMemoryError& error, const char* doing,
                                          const FunctionInfo& function) const;
  std::string describe_pool() const;  // "pool 3: 2 segments, 4.00 MiB reserved, ..."

  // Why this call must run eagerly before anything else is decided, if it must.
  std::optional<Fallback> eager_fallback(FunctionInfo& function, const TensorList& inputs);
  std::optional<Fallback> mutation_fallback(const FunctionInfo& function,
                                            const TensorList& inputs) const;
  void warn_pending_backwards(FunctionInfo& function);
  void warn(const std::string& message);
  void check_pool(const char* when) const;
  std::vector<std::unique_ptr<GraphNode>>& siblings_for(int function_id);
  std::int64_t node_key() const;

  // See Note [Releasing managed functions] (managed_function.cpp).
  static std::shared_ptr<Lifeline> make_lifeline();
  void cut_lifeline();
  void release_function(int added_id);
  void release_functions_released_elsewhere();
  void free_recordings_of(int added_id);

  Device device_;
  TreeOptions options_;
  std::thread::id thread_;
  Stream stream_;
  // A stream ordered after the pool's last work: the manager's, or the default stream after a
  // replay there (never given back, so safe to wait for later). See
  // Note [The caller's stream and the manager's stream].
  Stream pool_stream_;
  PoolId pool_;

  FunctionCache functions_;
  int live_functions_ = 0;          // added functions not yet released
  std::source_location call_site_;  // of the top-level call under way
  int running_ = 0;  // calls of run() under way on this manager (releases wait for 0)
  std::vector<int> deferred_releases_;
  std::map<int, std::vector<std::unique_ptr<GraphNode>>> roots_;
  std::vector<std::unique_ptr<WarmupNode>> warmup_chain_;  // warm-up nodes of the current path
  TreeNode* current_ = nullptr;
  PathState state_ = PathState::None;
  std::uint64_t current_generation_ = 0;
  bool pending_backwards_ = false;
  std::vector<StorageWeakRef> pending_forward_outputs_;  // outputs of forwards since a backward
  std::int64_t next_graph_id_ = 0;
  std::int64_t next_warmup_id_ = -1;
  // Per position: whether the function mutates inputs a graph would copy (decided when the
  // position is first reached), whether its recording failed there, how often it re-recorded.
  std::map<Position, std::optional<Fallback>> mutation_fallbacks_;
  struct CaptureFailure {
    Fallback fallback;
    int failures = 0;
    std::int64_t eager_calls_left = 0;  // before the next retry
  };
  std::map<Position, CaptureFailure> capture_failures_;
  std::map<Position, int> rerecords_;

  TreeCounters counters_;
  std::set<std::pair<FallbackReason, std::string>> warned_fallbacks_;  // (reason, label)
  std::vector<std::string> warnings_;
  std::shared_ptr<Lifeline> lifeline_;
};

// The calling thread's manager for `device` (created on first use).
TreeManager& tree_manager(Device device);

}  // namespace grove::graphs
