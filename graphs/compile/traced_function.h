// TracedFunction: one traced signature of a compiled function: its graphs, the interpreters
// that run them, their managed functions, and the call that ties them to autograd.
// See graphs/compile/compile.h for the whole story; this file is steps 1-4 for one signature.
//
// Note [Exactly one eager call's effects]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Every call of a compiled function has the effects of exactly one eager call: the call that
// traces, the calls that replay and the calls that fall back alike. The trace is not a dry run
// beside the call: it is the call's eager run, watched by a Tracer, and its results are the
// call's results (trace()'s `outputs`). So:
//   - a host access in the function (item(), printing, a raw data_ptr()) stops the trace where
//     it happens and lets the function finish eagerly (Tracer::stop_reason()); the writes it
//     made before the access happen once, not once in an aborted trace and again in a fallback;
//   - a trace with a backward does not run its forward graph on the call that traced: the
//     forward's values are the eager run's. The call's outputs get the node of a compiled call,
//     whose backward graph runs interpreted on the values the eager run left (held from the
//     moment the function returned: Tracer::live_storages()). Its eager autograd graph, kept
//     while the backward was traced, serves instead when the trace turns out unusable before
//     the graph is dropped (tensors on two devices, an output aliasing an input);
//   - the tracing run stands for the tree manager's warm-up (WrappedFunction::warmed_up): the
//     next call records and the one after replays, for training and inference functions alike.
//
// Note [Whole training steps]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A function that calls backward() itself, and then an optimizer's update, is a whole step:
// its trace has no backward of its own, so it is one inference graph in which the update
// writes the parameters, the gradients and the optimizer's state (static inputs) in place.
// Running such a function has effects, so:
//   - the call that traces takes the trace's own outputs, as every call that traces does
//     (Note [Exactly one eager call's effects]);
//   - a trace that left tensors it made alive past the call (an optimizer's state made on its
//     first step) cannot be replayed: the graph would write its own memory, not theirs. That
//     call's results stand, and the next call traces again, when the state exists and is found
//     as static inputs (Tracer::values_kept_outside; a second such trace runs eagerly);
//   - a gradient the step made (zero_grad set grad() to none, accumulation adopted the new
//     tensor) is copied by the graph into a buffer of its own, a static input, which becomes
//     grad() after every call (keep_made_gradients): grad() then holds each step's gradients
//     between steps, as in eager mode, and not memory the next replay reuses;
//   - whether a leaf's grad() is defined when a call begins decides what accumulation does
//     (adopt or add), so a trace records that state (autograd's GradWriteLog) and serves only
//     calls that begin in it; micro-batches (the first adopts, the others add) get two traces.
//     A gradient the graph adds into is a static input by identity: when zero_grad replaced it
//     since, the call traces again (zero_() gradients in place to keep one graph).
// The learning rate and AdamW's step live in tensors that the kernels read when they run
// (ops/optim.h), so a schedule never needs a new trace or recording.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autograd/grad_writes.h"
#include "graphs/compile/compile.h"
#include "graphs/compile/compiled_backward.h"
#include "graphs/compile/signature.h"
#include "graphs/ir/graph.h"
#include "graphs/ir/interpreter.h"
#include "graphs/trace/partition.h"
#include "graphs/trace/tracer.h"
#include "graphs/tree/tree_manager.h"

namespace grove::graphs {

class TracedFunction : public std::enable_shared_from_this<TracedFunction> {
 public:
  // Traces `function` on `inputs`: runs it once, eagerly, as this call's run (see the Note),
  // and puts that run's results into `*outputs` (when given; nullopt when a host access was
  // refused under or_error). If the trace cannot be replayed, the result is eager() with the
  // reason. `where` is the caller's source location (see CompiledFunction's call). (The
  // results are handed out, not kept: a result's CompiledBackward holds the TracedFunction.)
  static std::shared_ptr<TracedFunction> trace(
      const std::function<TensorList(const TensorList&)>& function, const TensorList& inputs,
      const CompileOptions& options,
      const std::source_location& where = std::source_location::current(),
      std::optional<TensorList>* outputs = nullptr);

  // Runs the traced graphs on `inputs` (of this signature) and returns the outputs, with an
  // autograd node attached when the trace has a backward.
  // `where` is the caller's source location (see CompiledFunction's call).
  TensorList call(const TensorList& inputs, const std::source_location& where);

  bool eager() const { return eager_reason_.has_value(); }
  // The trace kept tensors it made as state (an optimizer's first step): eager(), and another
  // trace on the next call, once the state exists, may succeed.
  bool made_state() const { return !kept_state_.empty(); }
  // A function that ran backward() itself: one inference graph for the whole step.
  bool whole_step() const { return whole_step_; }
  const std::string& eager_reason() const { return *eager_reason_; }
  // True when grove holds the last handle on a static input (the caller dropped it).
  bool static_released() const;
  std::string dump() const;
  // Whole steps: whether a leaf's gradient is defined when a call begins decides what the
  // step's accumulation does (adopt or add), so a trace holds for calls that begin as it did;
  // and a gradient the graph uses in place is a static input by identity, so a grad() replaced
  // since (zero_grad setting it to none) needs another trace.
  bool gradient_state_matches() const;
  bool gradient_replaced() const;

  const std::string& name() const { return name_; }
  // CompileOptions::explain of the compile() that traced this.
  ExplainLevel explain_setting() const { return explain_; }

  // The graphs (for tests): forward and backward when has_backward(), else inference.
  bool has_backward() const { return has_backward_; }
  const Graph& forward_graph() const { return parts_->forward; }
  const Graph& backward_graph() const { return parts_->backward; }
  const Graph& inference_graph() const { return *inference_; }
  const Partition& partition() const { return *parts_; }

  // --- used by the autograd node ---
  // `where`: the source location of the call whose backward this is.
  TensorList run_backward(const TensorList& saved_and_grads, const std::source_location& where,
                          BackwardRoute route);
  // Which output gradients the backward takes, and where its results go.
  const std::vector<std::size_t>& differentiable_outputs() const { return differentiable_; }

 private:
  TracedFunction() = default;
  // Both return the call's outputs (see trace()).
  std::optional<TensorList> run_traced(const std::function<TensorList(const TensorList&)>& function,
                                       const TensorList& inputs, const CompileOptions& options,
                                       const std::source_location& where);
  TensorList finish_first_call(const Tracer& tracer, const std::vector<StoragePtr>& live,
                               const TensorList& inputs, TensorList outputs,
                               const std::source_location& where);
  void build(const CompileOptions& options);
  std::vector<autograd::Edge> gradient_edges(const TensorList& inputs) const;
  void note_gradient_state(const std::vector<autograd::GradWrite>& writes);
  void keep_made_gradients(Tracer& tracer, std::uint64_t first_serial);

  std::string name_;
  CompileMode mode_ = CompileMode::Graphed;
  ExplainLevel explain_ = ExplainLevel::Off;
  Device device_ = kCPU;
  std::optional<std::string> eager_reason_;
  bool has_backward_ = false;
  bool whole_step_ = false;
  std::vector<std::string> kept_state_;  // see made_state()
  // Whole steps: (static, grad() defined when the trace began) for the leaves it wrote the
  // gradient of; (static, the static that is its grad()) for gradients the graph uses.
  std::vector<std::pair<std::size_t, bool>> grad_defined_at_entry_;
  std::vector<std::pair<std::size_t, std::size_t>> grad_statics_;
  // Whole steps: (leaf static, its gradient buffer's static): see keep_made_gradients.
  std::vector<std::pair<std::size_t, std::size_t>> grad_buffers_;
  std::size_t num_inputs_ = 0;
  std::size_t num_outputs_ = 0;

  std::vector<Tensor> statics_;              // the joint trace's static inputs, in order
  std::vector<std::size_t> differentiable_;  // outputs that get a gradient placeholder
  // Gradient targets, in the order of the joint graph's gradient outputs: an input index, or
  // -1 - k for static input k.
  std::vector<std::int64_t> grad_targets_;
  std::optional<Partition> parts_;
  std::optional<Graph> inference_;
  std::unique_ptr<Interpreter> forward_interpreter_, backward_interpreter_;
  std::optional<ManagedFunction> forward_function_, backward_function_;
};

}  // namespace grove::graphs
