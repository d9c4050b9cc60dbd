// explain: graphed mode narrates what it decides, one readable line per decision, and keeps
// process-wide counters of it (graphs::stats()).
//
// Note [Explaining graphed mode]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Graphed mode makes decisions a user cannot see: a call traced or served by an existing
// trace, warmed up, recorded or replayed; a pool checkpoint restored; a graph re-recorded
// because a static input moved; a call run eagerly, and why; a generation ended and which of
// its outputs were poisoned. With explaining on, each such decision is one line:
//     grove explain: replay 'compiled forward' (graph node 0)
// Explaining is on for a thread while an ExplainScope that turned it on is alive there:
//   - CompileOptions::explain: during that compiled function's calls and its backward;
//   - TreeOptions::explain: during every call of the manager's functions;
//   - the environment variable GROVE_EXPLAIN (1 or verbose): everywhere, for the whole
//     program; "verbose" adds the first lines of each traced graph.
// The lines go to the thread's sink: standard error, unless an ExplainSinkGuard routes them
// elsewhere (a test, a program's log). Building a line costs only when explaining is on:
// callers test explaining() first.
//
// Independently of explaining, every decision is counted: per tree manager in its counters(),
// and for the whole process (every thread and device) in graphs::stats().
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "graphs/tree/tree_types.h"

namespace grove::graphs {

enum class ExplainLevel : std::uint8_t {
  Off,
  On,       // one line per decision
  Verbose,  // also the first lines of each traced graph
};

// The level in effect on this thread now (the highest of the live scopes and GROVE_EXPLAIN).
ExplainLevel explain_level();
inline bool explaining() {
  return explain_level() != ExplainLevel::Off;
}

// Sends one line to this thread's sink. Call it only when explaining() is true.
void explain(const std::string& line);

// Raises this thread's level to `level` while alive (a lower level changes nothing). Nests.
class ExplainScope {
 public:
  explicit ExplainScope(ExplainLevel level);
  ~ExplainScope();
  ExplainScope(const ExplainScope&) = delete;
  ExplainScope& operator=(const ExplainScope&) = delete;

 private:
  ExplainLevel previous_;
};

// Routes this thread's explain lines to `sink` while alive (instead of standard error). Nests.
using ExplainSink = std::function<void(const std::string& line)>;
class ExplainSinkGuard {
 public:
  explicit ExplainSinkGuard(ExplainSink sink);
  ~ExplainSinkGuard();
  ExplainSinkGuard(const ExplainSinkGuard&) = delete;
  ExplainSinkGuard& operator=(const ExplainSinkGuard&) = delete;

 private:
  ExplainSink previous_;
};

// What graphed mode did in this process so far, summed over every thread and device.
struct GraphStats {
  TreeCounters trees;  // every tree manager's counters (those of managers since destroyed too)
  std::uint64_t traces = 0;       // compile(): signatures traced
  std::uint64_t retraces = 0;     // traced again because a static input was replaced
  std::uint64_t eager_calls = 0;  // compiled calls that ran the function as written
  // New signatures of a compiled function past its CompileOptions::recompile_limit (run as
  // written, not traced).
  std::uint64_t recompile_limit_calls = 0;
  // Compiled calls made inside another compiled function's trace (run as part of that trace).
  std::uint64_t inlined_calls = 0;
  std::size_t pool_bytes = 0;  // memory reserved by graph pools now, every device
  // A few lines for the end of a program.
  std::string to_text() const;
};
GraphStats stats();

// --- for graphs' own files: counting ---
enum class GraphEvent : std::uint8_t {
  Warmup,
  Recording,
  Replay,
  Checkpoint,
  Rerecord,
  EagerFallback,
  PoisonedOutput,
  Generation,
  Trace,
  Retrace,
  CompiledEagerCall,
  RecompileLimit,
  InlinedCall,
  CaptureRetry,
  kCount,
};
void count_event(GraphEvent event, std::uint64_t n = 1);
void count_fallback(FallbackReason reason);

}  // namespace grove::graphs
