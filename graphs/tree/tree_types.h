// Vocabulary of the graph-tree manager: function modes, ids, options, counters and the
// function a user hands to the manager. See tree_manager.h for how they are used.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace grove::graphs {

using TensorList = std::vector<Tensor>;
// The body of a managed function (WrappedFunction::callable).
using Callable = std::function<TensorList(const TensorList& inputs)>;

// What a function is, for the pending-backward bookkeeping: a Forward leaves a backward
// pending until some Backward runs; Inference never does.
enum class FunctionMode : std::uint8_t { Forward, Backward, Inference };

// Where the manager is on its current path.
enum class PathState : std::uint8_t {
  None,       // no live outputs from the pool matter
  Warmup,     // the current node ran eagerly in the pool
  Recording,  // the current node was just recorded
  Execution,  // the current node was replayed
};
const char* state_name(PathState state);

// Why a call ran eagerly, outside the graphs (TreeCounters::fallbacks, messages).
enum class FallbackReason : std::uint8_t {
  DynamicShapes,       // a signature past dynamic_shape_warn_limit, with skip_dynamic_graphs
  UncapturedSize,      // sizes of dynamic_dims that capture_sizes does not list
  MutatedInput,        // writes to an input that is neither static nor a graph output
  MutatedGraphOutput,  // writes to a graph output, under forbid_graph_output_mutation
  CaptureFailed,       // the recording threw (a host read, a synchronisation, ...)
  RerecordLimit,       // re-recorded rerecord_limit times at one tree position
  WarmupChainLimit,    // max_warmup_chain warm-ups in a row on one path
};
// "mutated inputs", "capture failed", ...: how messages name the reason.
const char* fallback_reason_name(FallbackReason reason);

// A dimension whose size may change from call to call: dimension `dim` of input `input`.
struct DynamicDim {
  int input = 0;
  int dim = 0;
};

// A callable and what the manager must know about its inputs.
struct WrappedFunction {
  Callable callable;
  // Inputs that keep their address from call to call (parameters, buffers): used in place,
  // never copied. If one moves, the function is re-recorded (up to a limit).
  std::vector<int> static_input_indices;
  FunctionMode mode = FunctionMode::Inference;
  // Inputs the function writes to. Inputs whose version counter changes during the warm-up
  // are added automatically, so a forgotten entry is caught, not silently replayed wrong.
  std::vector<int> mutated_input_indices;
  // Shown in messages, dumps and counters.
  std::string name = "function";
  // Names of the inputs for messages (a parameter's name, say); unnamed inputs are shown by
  // index only. May be shorter than the inputs.
  std::vector<std::string> input_names;
  // Capture sizes: when capture_sizes is not empty, a call is recorded only if the sizes of
  // dynamic_dims (in order) are one of its entries; a call with other sizes runs eagerly,
  // counted under FallbackReason::UncapturedSize, without a warm-up or a graph of its own (as
  // the reference's capture sizes). Each entry has one size per dynamic dim, e.g. dynamic_dims
  // {{0, 0}} and capture_sizes {{2}, {5}, {7}} record batches of 2, 5 and 7 only.
  std::vector<DynamicDim> dynamic_dims;
  std::vector<std::vector<std::int64_t>> capture_sizes;
  // The caller has already run the function's work eagerly, for these signatures' warm-up
  // purposes (compile's trace runs the user's function: Note [Exactly one eager call's effects]
  // in graphs/compile/traced_function.h), so its first call records. As with
  // TreeOptions::skip_warmup, mutations are then known only from mutated_input_indices.
  bool warmed_up = false;
};

struct TreeOptions {
  // Re-recordings of one function at one tree position caused by moved static inputs or moved
  // graph-managed inputs, before that function runs eagerly there.
  int rerecord_limit = 128;
  // Warn once a function has seen this many distinct input signatures (0: never warn).
  int dynamic_shape_warn_limit = 8;
  // Run signatures past the limit eagerly instead of recording a graph for each.
  bool skip_dynamic_graphs = false;
  // Longest chain of warm-ups on one path (a forward whose backward never comes, with its
  // outputs kept alive, keeps the path from ending); past it, calls run eagerly outside the pool.
  int max_warmup_chain = 64;
  // Record a function on its first call, without an eager warm-up (for functions known to be
  // capturable). Mutations are then not detected by a warm-up: list them in
  // mutated_input_indices. A call right after a warm-up of another function still warms up,
  // since a recording cannot follow a warm-up on one path.
  bool skip_warmup = false;
  // Run a function that writes into an input that is an output of an earlier graph on the path
  // eagerly (one message), instead of recording the write into that graph's memory as a child.
  bool forbid_graph_output_mutation = false;
  // Recordings tried again at a tree position after a failed capture there, before its calls
  // run eagerly for good (Note [Retrying a failed capture] in tree_manager.h).
  int capture_retry_limit = 3;
  // Throw instead of falling back to eager mode (for any reason).
  bool or_error = false;
  // After each recording and checkpoint, check that the pool's live blocks are exactly the live
  // outputs (slow; on in tests).
  bool debug_checks = false;
  // Print warnings to stderr (they are always kept in TreeManager::warnings()).
  bool print_warnings = true;
  // Narrate every decision of this manager's calls, one line each
  // (Note [Explaining graphed mode] in graphs/explain.h).
  bool explain = false;
};

struct TreeCounters {
  std::uint64_t warmups = 0;  // eager runs in the pool (first calls, or after warm-ups)
  std::uint64_t recordings = 0;
  std::uint64_t replays = 0;
  std::uint64_t checkpoints = 0;      // pool restored from a node's checkpoint
  std::uint64_t rerecords = 0;        // recordings caused by moved static/managed inputs
  std::uint64_t eager_fallbacks = 0;  // calls run eagerly outside the pool
  std::uint64_t poisoned_outputs = 0;
  std::uint64_t generations = 0;      // new generations started
  std::uint64_t capture_retries = 0;  // recordings tried again after a failed capture
  std::map<FallbackReason, std::uint64_t> fallbacks;  // eager_fallbacks by reason
};

}  // namespace grove::graphs
