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
//      a device graph, later calls replay it (graphs/tree/tree_manager.h). Their bodies are the
//      Interpreter (graphs/ir/interpreter.h): the user's C++ is not run again.
//   4. The outputs carry an autograd node whose backward runs the backward graph, so
//      loss.backward() accumulates into grad() exactly as eager mode would, also when the
//      compiled function is one part of a bigger eager computation.
//
// A trace is a snapshot of what the function did for that signature (as torch.jit.trace, JAX's
// jit and tinygrad's TinyJit): branches on tensor values, host-side state the function reads
// and the identity of the parameters it found are baked in. What that means for a user:
//   - every call has the effects of exactly one eager call, including the call that traces
//     (the trace is that call's eager run, watched) and every call that falls back
//     (Note [Exactly one eager call's effects] in graphs/compile/traced_function.h). So a
//     whole step that logs loss.item() updates once;
//   - a host access of tensor memory cannot be replayed: item(), to_vector(), printing a
//     tensor, a copy from a device to the host, and a raw pointer from data_ptr(), data<T>()
//     or Storage::data() (Note [Host reads during a trace] in core/host_reads.h). The trace
//     stops at the first one and the function finishes eagerly; that signature runs as written
//     from then on, with the reason logged once and counted (CompileStats), or an error under
//     CompileOptions::or_error;
//   - the signature is each input's sizes, strides, dtype, device, requires_grad and how it
//     shares memory with the other inputs, and grad mode
//     (Note [The signature of a compiled call]); past recompile_limit signatures, new ones run
//     as written;
//   - the first call of a signature traces (an eager run), the second records, later calls
//     replay: for training and inference functions alike;
//   - a compiled function called while another compiled function traces (itself, or another
//     one) runs as written, so its ops become part of the outer trace (counted as inlined);
//   - when a parameter the trace found is replaced by another tensor (model.weight = new
//     tensor), the trace still uses the old one. With retrace_on_released_static (the default)
//     a call notices when grove holds the last handle on a traced static input, and traces
//     again; a replaced tensor that something else keeps alive cannot be noticed: call
//     reset() after replacing parameters;
//   - side effects in the function's C++ that are not tensor work (counters, logging) happen
//     on the calls that run it: the call that traces and calls that run as written.
//
// Errors a user can make get a grove::Error naming what was expected and what was found;
// inputs of another signature are traced again, never a wrong replay.
//
// Threading: a CompiledFunction is called on one thread (the thread of its first call; a call
// from another throws); copies share their traces. Compile one function per thread to run on
// several: their traces, recordings and random numbers are independent
// (Note [Random numbers in captured graphs] in core/rng.h).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <source_location>
#include <string>

#include "graphs/explain.h"
#include "graphs/tree/tree_types.h"

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
  // The most input signatures this function is traced for
  // (Note [The signature of a compiled call] in graphs/compile/signature.h); calls with a further
  // signature run as written, with
  // the reason said once, counted (CompileStats::recompile_limit_calls, graphs::stats()) and
  // explained, or throw under or_error. As Dynamo's recompile limit, for the same reason: each
  // signature costs a trace, a recording and graph memory. 0: no limit.
  int recompile_limit = 8;
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
  std::uint64_t recompile_limit_calls = 0;  // of eager_calls: signatures past recompile_limit
  std::uint64_t inlined_calls = 0;          // calls made inside a trace (see the file comment)
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
