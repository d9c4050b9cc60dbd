// TreeManager's eager fallbacks: why a call must run eagerly (decided before any recording or
// re-record bookkeeping), and the eager run itself, logged once per reason and function and
// counted. See tree_manager.h.
#include <algorithm>

#include "graphs/explain.h"
#include "graphs/tree/tree_manager.h"

namespace grove::graphs {
namespace {

bool contains(const std::vector<int>& values, int value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

}  // namespace

const char* fallback_reason_name(FallbackReason reason) {
  switch (reason) {
    case FallbackReason::DynamicShapes:
      return "dynamic shapes";
    case FallbackReason::UncapturedSize:
      return "uncaptured size";
    case FallbackReason::MutatedInput:
      return "mutated inputs";
    case FallbackReason::MutatedGraphOutput:
      return "mutated graph output";
    case FallbackReason::CaptureFailed:
      return "capture failed";
    case FallbackReason::RerecordLimit:
      return "re-record limit";
    case FallbackReason::WarmupChainLimit:
      return "warm-up chain limit";
  }
  return "?";
}

std::optional<TreeManager::Fallback> TreeManager::eager_fallback(FunctionInfo& function,
                                                                 const TensorList& inputs) {
  const int limit = options_.dynamic_shape_warn_limit;
  if (options_.skip_dynamic_graphs && limit > 0 && function.signature_index >= limit) {
    return Fallback{FallbackReason::DynamicShapes,
                    str("signature ", function.signature_index + 1, " of '", function.wrapped->name,
                        "' is past the limit of ", limit,
                        " recorded signatures (TreeOptions::skip_dynamic_graphs)")};
  }
  const Position position{node_key(), function.id};
  if (auto failed = capture_failures_.find(position); failed != capture_failures_.end()) {
    // See Note [Retrying a failed capture] in tree_manager.h.
    CaptureFailure& failure = failed->second;
    if (failure.failures > options_.capture_retry_limit || failure.eager_calls_left > 0) {
      if (failure.eager_calls_left > 0) --failure.eager_calls_left;
      return failure.fallback;
    }
    ++counters_.capture_retries;
    count_event(GraphEvent::CaptureRetry);
    if (explaining()) {
      explain(str("retry recording '", function.label(), "' after ", failure.failures,
                  " failed capture", failure.failures > 1 ? "s" : "", " at this tree position"));
    }
  }
  auto mutation = mutation_fallbacks_.find(position);
  if (mutation == mutation_fallbacks_.end()) {
    mutation = mutation_fallbacks_.emplace(position, mutation_fallback(function, inputs)).first;
  }
  if (mutation->second) return mutation->second;
  auto rerecorded = rerecords_.find(position);
  if (rerecorded != rerecords_.end() && rerecorded->second > options_.rerecord_limit) {
    return Fallback{FallbackReason::RerecordLimit,
                    str("'", function.label(), "' was re-recorded more than ",
                        options_.rerecord_limit, " times at this tree position")};
  }
  return std::nullopt;
}

std::optional<TreeManager::Fallback> TreeManager::mutation_fallback(
    const FunctionInfo& function, const TensorList& inputs) const {
  for (int i : function.mutated_inputs) {
    if (i < 0 || i >= static_cast<int>(inputs.size())) continue;
    const Tensor& input = inputs[static_cast<std::size_t>(i)];
    if (!input.defined() || contains(function.wrapped->static_input_indices, i)) continue;
    if (current_ != nullptr && current_->find_path_output(input)) {
      if (!options_.forbid_graph_output_mutation) continue;
      return Fallback{FallbackReason::MutatedGraphOutput,
                      str("'", function.label(), "' writes to input ", i,
                          ", an output of an earlier graph on this path, and "
                          "TreeOptions::forbid_graph_output_mutation is set, so the function "
                          "runs eagerly")};
    }
    return Fallback{FallbackReason::MutatedInput,
                    str("'", function.label(), "' writes to input ", i,
                        ", which is neither a static input nor an output of an earlier graph on "
                        "this path; a graph would write to its own copy, so the function runs "
                        "eagerly")};
  }
  return std::nullopt;
}

TensorList TreeManager::run_eagerly(const WrappedFunction& wrapped, const std::string& label,
                                    const Fallback& fallback, const TensorList& inputs) {
  const char* reason = fallback_reason_name(fallback.reason);
  GROVE_CHECK(!options_.or_error, "graphed function '", label, "' cannot run as a graph: ", reason,
              ": ", fallback.why,
              " (TreeOptions::or_error is set, so this is an error instead of an eager fallback)");
  if (warned_fallbacks_.emplace(fallback.reason, label).second) {
    warn(str("running graphed function '", label, "' eagerly: ", reason, ": ", fallback.why));
  }
  ++counters_.eager_fallbacks;
  ++counters_.fallbacks[fallback.reason];
  count_event(GraphEvent::EagerFallback);
  count_fallback(fallback.reason);
  if (explaining()) explain(str("fallback to eager '", label, "': ", reason, ": ", fallback.why));
  return wrapped.callable(inputs);
}

}  // namespace grove::graphs
