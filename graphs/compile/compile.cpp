// compile(): the per-signature cache of traces and the eager fallbacks. See compile.h.
#include "graphs/compile/compile.h"

#include <algorithm>
#include <iostream>
#include <sstream>
#include <thread>

#include "graphs/compile/traced_function.h"
#include "graphs/trace/tracer.h"

namespace grove::graphs {
namespace detail {

struct CompiledState {
  std::function<TensorList(const TensorList&)> function;
  CompileOptions options;
  std::optional<std::thread::id> thread;  // of the first call
  CompileStats stats;
  std::vector<std::string> warnings;
  std::vector<std::pair<Signature, std::shared_ptr<TracedFunction>>> traces;
  std::vector<Signature> made_state;  // signatures whose first trace made state (see trace_for)
  bool said_recompile_limit = false;  // its warning was given

  void warn(const std::string& message) {
    warnings.push_back(message);
    if (options.print_warnings) std::cerr << "grove: " << message << "\n";
  }
};

}  // namespace detail

namespace {

// "trace 'step' for (float32[6, 8], int64[6]), grad on: forward 4 nodes, backward 14 nodes,
// 3 activations saved", and with verbose the graphs' first lines.
void explain_trace(const std::string& name, const Signature& signature,
                   const TracedFunction& traced) {
  if (traced.eager()) {
    explain(str("trace '", name, "' for ", signature.describe(),
                ": cannot be replayed, calls run as written: ", traced.eager_reason()));
    return;
  }
  if (traced.has_backward()) {
    explain(str("trace '", name, "' for ", signature.describe(), ": forward ",
                traced.forward_graph().nodes().size(), " nodes, backward ",
                traced.backward_graph().nodes().size(), " nodes, ", traced.partition().saved.size(),
                " values saved for the backward"));
  } else {
    explain(str("trace '", name, "' for ", signature.describe(), ": inference graph of ",
                traced.inference_graph().nodes().size(), " nodes"));
  }
  if (explain_level() != ExplainLevel::Verbose) return;
  constexpr int kLines = 12;
  std::istringstream text(traced.dump());
  std::string line;
  for (int n = 0; n < kLines && std::getline(text, line); ++n) explain("  " + line);
}

// The trace serving `inputs`: an existing one, a new one (this call's eager run, whose results
// go to `outputs`), or null when the signature is past the recompile limit.
std::shared_ptr<TracedFunction> trace_for(detail::CompiledState& state, const TensorList& inputs,
                                          const std::source_location& where,
                                          std::optional<TensorList>& outputs) {
  const Signature signature = Signature::of(inputs);
  for (auto it = state.traces.begin(); it != state.traces.end(); ++it) {
    if (!(it->first == signature)) continue;
    TracedFunction& candidate = *it->second;
    // Whole steps: one trace per state of the gradients at the start of a call.
    if (!candidate.gradient_state_matches()) continue;
    if (candidate.gradient_replaced()) {
      // Quiet: zero_grad() setting gradients to none between steps does this every step when
      // the step adds into them (micro-batches); zero_() them in place to keep one trace.
      if (explaining()) {
        explain("trace '" + state.options.name +
                "' again: a gradient its graph uses in place "
                "was replaced (set to none and made anew); zero_() it in place to keep the graph");
      }
      ++state.stats.retraces;
      count_event(GraphEvent::Retrace);
      state.traces.erase(it);
      break;
    }
    if (!state.options.retrace_on_released_static || !candidate.static_released()) {
      return it->second;
    }
    state.warn("compiled function '" + state.options.name + "': a static input of its trace for " +
               signature.describe() +
               " is no longer held by anything but the trace (a parameter was replaced?); "
               "tracing again");
    ++state.stats.retraces;
    count_event(GraphEvent::Retrace);
    state.traces.erase(it);
    break;
  }
  const auto limit = static_cast<std::size_t>(std::max(state.options.recompile_limit, 0));
  if (limit > 0 && !state.traces.empty()) {
    // Signatures, not traces: whole steps may keep two traces of one (see gradient_state).
    std::vector<const Signature*> seen;
    for (const auto& [traced_signature, traced] : state.traces) {
      if (std::none_of(seen.begin(), seen.end(),
                       [&](const Signature* s) { return *s == traced_signature; })) {
        seen.push_back(&traced_signature);
      }
    }
    const bool known =
        std::any_of(seen.begin(), seen.end(), [&](const Signature* s) { return *s == signature; });
    if (!known && seen.size() >= limit) return nullptr;
  }
  std::shared_ptr<TracedFunction> traced =
      TracedFunction::trace(state.function, inputs, state.options, where, &outputs);
  ++state.stats.traces;
  count_event(GraphEvent::Trace);
  if (explaining()) explain_trace(state.options.name, signature, *traced);
  if (traced->made_state()) {
    // The first call of a step made its state (an optimizer's buffers, adopted gradients):
    // trace once more on the next call, when that state exists and is found, not made.
    const auto made_before = std::find(state.made_state.begin(), state.made_state.end(), signature);
    if (made_before == state.made_state.end()) {
      state.made_state.push_back(signature);
      if (explaining()) {
        explain("trace '" + state.options.name + "' made state during its call (" +
                traced->eager_reason() + "); traced again on the next call");
      }
      return traced;  // not kept: this call takes its outputs
    }
  }
  if (traced->eager()) {
    state.warn("compiled function '" + state.options.name + "' runs eagerly for " +
               signature.describe() + ": " + traced->eager_reason());
  }
  state.traces.emplace_back(signature, traced);
  return traced;
}

// A call that runs the function as written: counted, explained, refused under or_error.
TensorList run_as_written(detail::CompiledState& state, const std::string& reason,
                          std::optional<TensorList> outputs_of_the_trace,
                          const TensorList& inputs) {
  GROVE_CHECK(!state.options.or_error, "compiled function '", state.options.name,
              "' cannot be replayed: ", reason,
              " (CompileOptions::or_error is set; unset it to run such calls eagerly)");
  ++state.stats.eager_calls;
  ++state.stats.eager_reasons[reason];
  count_event(GraphEvent::CompiledEagerCall);
  if (explaining()) explain("run '" + state.options.name + "' as written (eagerly): " + reason);
  if (outputs_of_the_trace) return *std::move(outputs_of_the_trace);  // it ran already
  return state.function(inputs);
}

}  // namespace

TensorList CompiledFunction::operator()(const TensorList& inputs,
                                        std::source_location where) const {
  GROVE_CHECK(state_ != nullptr, "calling an empty CompiledFunction; make one with compile()");
  detail::CompiledState& state = *state_;
  ++state.stats.calls;
  if (state.options.mode == CompileMode::Eager) return state.function(inputs);
  if (!state.thread) state.thread = std::this_thread::get_id();
  GROVE_CHECK(*state.thread == std::this_thread::get_id(), "compiled function '",
              state.options.name,
              "' was called on another thread than its first call's; its traces and graphs "
              "belong to that thread. Compile one function per thread (each gets its own "
              "traces and recordings)");
  const ExplainScope explain_scope(state.options.explain);
  if (Tracer::tracing_on_this_thread()) {
    // Called while a compiled function traces (this one calling itself, or another one): its
    // ops are part of that trace, and its own traces stay as they are.
    ++state.stats.inlined_calls;
    count_event(GraphEvent::InlinedCall);
    if (explaining()) {
      explain("run '" + state.options.name + "' as part of the trace that calls it");
    }
    return state.function(inputs);
  }
  std::optional<TensorList> outputs;  // of a call that traced
  const std::shared_ptr<TracedFunction> found = trace_for(state, inputs, where, outputs);
  if (found == nullptr) {
    const std::string reason =
        str("a new input signature ", Signature::of(inputs).describe(), " past the limit of ",
            state.options.recompile_limit,
            " traced signatures (CompileOptions::recompile_limit); pad inputs to a few shapes, "
            "or raise the limit");
    if (!state.said_recompile_limit && !state.options.or_error) {
      state.said_recompile_limit = true;
      state.warn("compiled function '" + state.options.name + "' runs eagerly for " + reason);
    }
    ++state.stats.recompile_limit_calls;
    count_event(GraphEvent::RecompileLimit);
    return run_as_written(state, reason, std::nullopt, inputs);
  }
  TracedFunction& traced = *found;
  // The call that traced ran the function: its results are this call's.
  if (outputs) {
    // (A step that made its state is traced again on the next call, not run as written.)
    if (!traced.eager() || traced.made_state()) return *std::move(outputs);
    return run_as_written(state, traced.eager_reason(), std::move(outputs), inputs);
  }
  if (!traced.eager()) return traced.call(inputs, where);
  return run_as_written(state, traced.eager_reason(), std::nullopt, inputs);
}

Tensor CompiledFunction::operator()(const Tensor& input, std::source_location where) const {
  const TensorList outputs = (*this)(TensorList{input}, where);
  GROVE_CHECK(!outputs.empty(), "compiled function '", state_->options.name,
              "' returned no tensors; the one-tensor call returns the first");
  return outputs[0];
}

const CompileStats& CompiledFunction::stats() const {
  GROVE_CHECK(state_ != nullptr, "an empty CompiledFunction has no stats");
  return state_->stats;
}

const std::vector<std::string>& CompiledFunction::warnings() const {
  GROVE_CHECK(state_ != nullptr, "an empty CompiledFunction has no warnings");
  return state_->warnings;
}

std::string CompiledFunction::dump() const {
  GROVE_CHECK(state_ != nullptr, "an empty CompiledFunction has nothing to dump");
  std::ostringstream out;
  for (const auto& [signature, traced] : state_->traces) {
    out << "# " << state_->options.name << " for " << signature.describe() << "\n"
        << traced->dump();
  }
  return out.str();
}

void CompiledFunction::reset() const {
  GROVE_CHECK(state_ != nullptr, "an empty CompiledFunction has nothing to reset");
  state_->traces.clear();
}

CompiledFunction compile(std::function<TensorList(const TensorList&)> function,
                         CompileOptions options) {
  GROVE_CHECK(static_cast<bool>(function), "compile: the function is empty");
  CompiledFunction compiled;
  compiled.state_ = std::make_shared<detail::CompiledState>();
  compiled.state_->function = std::move(function);
  compiled.state_->options = std::move(options);
  return compiled;
}

CompiledFunction compile(std::function<Tensor(const Tensor&)> function, CompileOptions options) {
  GROVE_CHECK(static_cast<bool>(function), "compile: the function is empty");
  return compile(
      [function = std::move(function)](const TensorList& inputs) {
        GROVE_CHECK(inputs.size() == 1, "this compiled function takes one tensor, but got ",
                    inputs.size());
        return TensorList{function(inputs[0])};
      },
      std::move(options));
}

}  // namespace grove::graphs
