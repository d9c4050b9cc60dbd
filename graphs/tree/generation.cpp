#include "graphs/tree/generation.h"

namespace grove::graphs {
namespace {

thread_local std::uint64_t invocation_generation = 0;
thread_local std::uint64_t mark_step_generation = 0;  // 0: never marked
thread_local int invocation_depth = 0;

}  // namespace

void mark_step_begin() {
  ++mark_step_generation;
}

bool user_marked_steps() {
  return mark_step_generation != 0;
}

std::uint64_t current_generation() {
  // Separate ranges so that switching to marked steps always looks like a new generation.
  return user_marked_steps() ? (1ULL << 62) + mark_step_generation : invocation_generation;
}

InvocationScope::InvocationScope(bool advances_generation) : top_level_(invocation_depth == 0) {
  if (top_level_ && advances_generation) ++invocation_generation;
  ++invocation_depth;
}

InvocationScope::~InvocationScope() {
  --invocation_depth;
}

}  // namespace grove::graphs
