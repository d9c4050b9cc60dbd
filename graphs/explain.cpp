// Explain lines and process-wide counters. See Note [Explaining graphed mode] in explain.h.
#include "graphs/explain.h"

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "core/caching_allocator.h"
#include "core/format.h"

namespace grove::graphs {
namespace {

ExplainLevel level_from_environment() {
  const char* value = std::getenv("GROVE_EXPLAIN");
  if (value == nullptr) return ExplainLevel::Off;
  const std::string_view text(value);
  if (text.empty() || text == "0" || text == "off") return ExplainLevel::Off;
  return text == "verbose" || text == "2" ? ExplainLevel::Verbose : ExplainLevel::On;
}

// Read once: the environment is the program's switch, not something that changes as it runs.
const ExplainLevel environment_level = level_from_environment();

thread_local ExplainLevel thread_level = ExplainLevel::Off;
thread_local ExplainSink thread_sink;  // empty: standard error

constexpr auto kEvents = static_cast<std::size_t>(GraphEvent::kCount);
constexpr auto kReasons = static_cast<std::size_t>(FallbackReason::WarmupChainLimit) + 1;
std::array<std::atomic<std::uint64_t>, kEvents> event_counts{};
std::array<std::atomic<std::uint64_t>, kReasons> fallback_counts{};

std::uint64_t count_of(GraphEvent event) {
  return event_counts[static_cast<std::size_t>(event)].load(std::memory_order_relaxed);
}

}  // namespace

ExplainLevel explain_level() {
  return std::max(thread_level, environment_level);
}

void explain(const std::string& line) {
  if (thread_sink) {
    thread_sink(line);
  } else {
    std::fprintf(stderr, "grove explain: %s\n", line.c_str());
  }
}

ExplainScope::ExplainScope(ExplainLevel level) : previous_(thread_level) {
  thread_level = std::max(thread_level, level);
}

ExplainScope::~ExplainScope() {
  thread_level = previous_;
}

ExplainSinkGuard::ExplainSinkGuard(ExplainSink sink) : previous_(std::move(thread_sink)) {
  thread_sink = std::move(sink);
}

ExplainSinkGuard::~ExplainSinkGuard() {
  thread_sink = std::move(previous_);
}

void count_event(GraphEvent event, std::uint64_t n) {
  event_counts[static_cast<std::size_t>(event)].fetch_add(n, std::memory_order_relaxed);
}

void count_fallback(FallbackReason reason) {
  fallback_counts[static_cast<std::size_t>(reason)].fetch_add(1, std::memory_order_relaxed);
}

GraphStats stats() {
  GraphStats result;
  TreeCounters& trees = result.trees;
  trees.warmups = count_of(GraphEvent::Warmup);
  trees.recordings = count_of(GraphEvent::Recording);
  trees.replays = count_of(GraphEvent::Replay);
  trees.checkpoints = count_of(GraphEvent::Checkpoint);
  trees.rerecords = count_of(GraphEvent::Rerecord);
  trees.eager_fallbacks = count_of(GraphEvent::EagerFallback);
  trees.poisoned_outputs = count_of(GraphEvent::PoisonedOutput);
  trees.generations = count_of(GraphEvent::Generation);
  for (std::size_t r = 0; r < kReasons; ++r) {
    const std::uint64_t n = fallback_counts[r].load(std::memory_order_relaxed);
    if (n > 0) trees.fallbacks[static_cast<FallbackReason>(r)] = n;
  }
  result.traces = count_of(GraphEvent::Trace);
  result.retraces = count_of(GraphEvent::Retrace);
  result.eager_calls = count_of(GraphEvent::CompiledEagerCall);
  result.recompile_limit_calls = count_of(GraphEvent::RecompileLimit);
  result.inlined_calls = count_of(GraphEvent::InlinedCall);
  trees.capture_retries = count_of(GraphEvent::CaptureRetry);
  result.pool_bytes = allocator_for(kCPU).stats().private_pool_bytes;
  for (int i = 0; i < cuda_device_count(); ++i) {
    result.pool_bytes += allocator_for(cuda(i)).stats().private_pool_bytes;
  }
  return result;
}

std::string GraphStats::to_text() const {
  std::string fallbacks;
  for (const auto& [reason, n] : trees.fallbacks) {
    fallbacks += str(fallbacks.empty() ? " (" : ", ", fallback_reason_name(reason), " ", n);
  }
  if (!fallbacks.empty()) fallbacks += ")";
  return str("graphed mode: ", traces, " traces (", retraces, " after a replaced parameter), ",
             eager_calls, " compiled calls run as written, ", recompile_limit_calls,
             " signatures past a recompile limit, ", inlined_calls,
             " compiled calls inside another trace\n", "graph trees: ", trees.warmups,
             " warm-ups, ", trees.recordings, " recordings, ", trees.replays, " replays, ",
             trees.checkpoints, " checkpoint restores, ", trees.rerecords, " re-records, ",
             trees.capture_retries, " capture retries, ", trees.generations, " generations ended, ",
             trees.poisoned_outputs, " outputs poisoned\n",
             "eager fallbacks: ", trees.eager_fallbacks, fallbacks, "\n",
             "graph pools: ", format_bytes(pool_bytes), " reserved\n");
}

}  // namespace grove::graphs
