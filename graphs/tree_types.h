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
  // Throw instead of falling back to eager mode (for any reason).
  bool or_error = false;
  // After each recording and checkpoint, check that the pool's live blocks are exactly the live
  // outputs (slow; on in tests).
  bool debug_checks = false;
  // Print warnings to stderr (they are always kept in TreeManager::warnings()).
  bool print_warnings = true;
};

struct TreeCounters {
  std::uint64_t warmups = 0;  // eager runs in the pool (first calls, or after warm-ups)
  std::uint64_t recordings = 0;
  std::uint64_t replays = 0;
  std::uint64_t checkpoints = 0;      // pool restored from a node's checkpoint
  std::uint64_t rerecords = 0;        // recordings caused by moved static/managed inputs
  std::uint64_t eager_fallbacks = 0;  // calls run eagerly outside the pool
  std::uint64_t poisoned_outputs = 0;
  std::uint64_t generations = 0;  // new generations started
  std::map<std::string, std::uint64_t> fallback_reasons;
};

}  // namespace grove::graphs
