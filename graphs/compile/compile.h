// grove::compile: graphed mode for an ordinary grove function.
//
//   graphs::CompiledFunction step = graphs::compile([&](const graphs::TensorList& in) {
//     return graphs::TensorList{ops::cross_entropy(model(in[0]), in[1])};
//   });
//   Tensor loss = step({x, y})[0];   // call it as before
//   loss.backward();                 // gradients reach the parameters as in eager mode
//
// What a call does (see also "the life of a call" in the README):
//   1. It finds the trace for the call's signature: each input's sizes, dtype, device and
//      requires_grad, and whether grad mode is on. A new signature is traced: the function runs
//      once, eagerly, under a Tracer (graphs/trace/tracer.h) that records every op, view, copy
//      and write into a graph. Tensors the function reaches without being given them
//      (parameters) become static inputs; tensors it makes without ops become constants.
//   2. With grad mode on and something requiring gradients, the trace goes on through the
//      autograd engine, run on the outputs with placeholder output gradients, and the joint
//      graph is split into a forward and a backward graph (graphs/trace/partition.h; the
//      forward returns the activations the backward needs). Otherwise one inference graph.
//   3. The graphs run through the device's tree manager as Forward/Backward (or Inference)
//      functions, their static inputs marked static: the first call warms up, the next records
//      a device graph, later calls replay it (graphs/tree_manager.h). Their bodies are the
//      Interpreter (graphs/ir/interpreter.h): the user's C++ is not run again.
//   4. The outputs carry an autograd node whose backward runs the backward graph, so
//      loss.backward() accumulates into grad() exactly as eager mode would, also when the
//      compiled function is one part of a bigger eager computation.
//
// A trace is a snapshot of what the function did for that signature (as torch.jit.trace, JAX's
// jit and tinygrad's TinyJit): branches on tensor values, host-side state the function reads
// and the identity of the parameters it found are baked in. So:
//   - a function that reads tensor data on the host (item(), to_vector(), a copy to the CPU)
//     cannot be replayed: it runs eagerly, with the reason logged once and counted
//     (CompileStats), or an error under CompileOptions::or_error;
//   - when a parameter the trace found is replaced by another tensor (model.weight = new
//     tensor), the trace still uses the old one. With retrace_on_released_static (the default)
//     a call notices when grove holds the last handle on a traced static input, and traces
//     again; a replaced tensor that something else keeps alive cannot be noticed: call
//     reset() after replacing parameters;
//   - a traced call runs the function once more than the calls you make (the trace itself),
//     so side effects in the function's C++ (counters, printing) happen at trace time only.
//
// Errors a user can make get a grove::Error naming what was expected and what was found;
// inputs of another shape, dtype, device or requires_grad are a new signature (traced again,
// with a warning past trace_warn_limit), never a wrong replay.
//
// Threading: a CompiledFunction may be called from one thread (its tree manager's); copies
// share their traces.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <source_location>
#include <string>

#include "graphs/explain.h"
#include "graphs/tree_types.h"

namespace grove::graphs {

enum class CompileMode : std::uint8_t {
  Graphed,    // the tree manager warms up, records and replays (the point of compile)
  Interpret,  // the traced graphs run eagerly through the interpreter (debugging a trace)
  Eager,      // the function is called as written (a switch to compare against)
};

struct CompileOptions {
  CompileMode mode = CompileMode::Graphed;
  // Shown in messages, the tree manager's dumps and graph dumps.
  std::string name = "compiled";
  // Applied to the device's tree manager (graphs::tree_manager) when this function first
  // records on it; unset: the manager's own options.
  std::optional<TreeOptions> tree_options;
  // Warn when a function has been traced for this many signatures (0: never).
  int trace_warn_limit = 8;
  // See the file comment.
  bool retrace_on_released_static = true;
  // Throw instead of running eagerly when a trace cannot be replayed.
  bool or_error = false;
  // Print warnings to stderr (they are always kept in CompiledFunction::warnings()).
  bool print_warnings = true;
  // Narrate each decision of this function's calls and backwards, one line each: traced,
  // warm-up, recording, replay, checkpoint restore, re-record, fallback, generation ended
  // (Note [Explaining graphed mode] in graphs/explain.h; GROVE_EXPLAIN=1 turns it on for a
  // whole program). Verbose adds the first lines of each traced graph.
  ExplainLevel explain = ExplainLevel::Off;
};

struct CompileStats {
  std::uint64_t calls = 0;
  std::uint64_t traces = 0;
  std::uint64_t retraces = 0;     // traced again because a static input was released
  std::uint64_t eager_calls = 0;  // calls that ran the function as written
  std::map<std::string, std::uint64_t> eager_reasons;
};

namespace detail {
struct CompiledState;
}

class CompiledFunction {
 public:
  CompiledFunction() = default;
  // `where` (the caller's source location) is named by the error of an output, or a gradient
  // of its backward, kept past the step.
  TensorList operator()(const TensorList& inputs,
                        std::source_location where = std::source_location::current()) const;
  // One tensor in, the first output out.
  Tensor operator()(const Tensor& input,
                    std::source_location where = std::source_location::current()) const;

  const CompileStats& stats() const;
  const std::vector<std::string>& warnings() const;
  // The graphs of every traced signature as text (the forward, backward or inference graph of
  // each), for reading what compile made of the function.
  std::string dump() const;
  // Forgets every trace; the next call traces again.
  void reset() const;

 private:
  friend CompiledFunction compile(std::function<TensorList(const TensorList&)> function,
                                  CompileOptions options);
  std::shared_ptr<detail::CompiledState> state_;
};

CompiledFunction compile(std::function<TensorList(const TensorList&)> function,
                         CompileOptions options = {});
CompiledFunction compile(std::function<Tensor(const Tensor&)> function,
                         CompileOptions options = {});

}  // namespace grove::graphs
