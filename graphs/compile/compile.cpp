// compile(): the per-signature cache of traces and the eager fallbacks. See compile.h.
#include "graphs/compile/compile.h"

#include <algorithm>
#include <iostream>
#include <sstream>

#include "graphs/compile/traced_function.h"

namespace grove::graphs {
namespace detail {

struct CompiledState {
  std::function<TensorList(const TensorList&)> function;
  CompileOptions options;
  CompileStats stats;
  std::vector<std::string> warnings;
  std::vector<std::pair<Signature, std::shared_ptr<TracedFunction>>> traces;
  std::vector<Signature> made_state;  // signatures whose first trace made state (see trace_for)

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

std::shared_ptr<TracedFunction> trace_for(detail::CompiledState& state, const TensorList& inputs) {
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
  std::shared_ptr<TracedFunction> traced =
      TracedFunction::trace(state.function, inputs, state.options);
  ++state.stats.traces;
  count_event(GraphEvent::Trace);
  if (explaining()) explain_trace(state.options.name, signature, *traced);
  const auto limit = static_cast<std::size_t>(state.options.trace_warn_limit);
  if (limit > 0 && state.traces.size() + 1 == limit) {
    state.warn("compiled function '" + state.options.name + "' has been traced for " +
               std::to_string(limit) + " input signatures (the latest: " + signature.describe() +
               "); each new shape, dtype, device or requires_grad traces and records again");
  }
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

}  // namespace

TensorList CompiledFunction::operator()(const TensorList& inputs,
                                        std::source_location where) const {
  GROVE_CHECK(state_ != nullptr, "calling an empty CompiledFunction; make one with compile()");
  detail::CompiledState& state = *state_;
  ++state.stats.calls;
  if (state.options.mode == CompileMode::Eager) return state.function(inputs);
  const ExplainScope explain_scope(state.options.explain);
  const std::shared_ptr<TracedFunction> found = trace_for(state, inputs);
  TracedFunction& traced = *found;
  // A trace that just ran the function to its end (without a backward) did this call's work.
  if (std::optional<TensorList> outputs = traced.take_outputs()) return *std::move(outputs);
  if (!traced.eager()) return traced.call(inputs, where);
  GROVE_CHECK(!state.options.or_error, "compiled function '", state.options.name,
              "' cannot be replayed: ", traced.eager_reason(),
              " (CompileOptions::or_error is set; unset it to run such calls eagerly)");
  ++state.stats.eager_calls;
  ++state.stats.eager_reasons[traced.eager_reason()];
  count_event(GraphEvent::CompiledEagerCall);
  if (explaining()) {
    explain("run '" + state.options.name + "' as written (eagerly): " + traced.eager_reason());
  }
  return state.function(inputs);
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
