// Generations: how the graph-tree manager knows that a new step began.
//
// Every top-level invocation of a managed function (one not nested inside another managed call)
// advances the calling thread's generation, except backward calls: a backward belongs to the
// step of its forward (mod2(mod1(x)) followed by two backwards is one step). Once the user calls
// mark_step_begin(), only calls of mark_step_begin() start generations (explicit step boundaries,
// as in the reference design). A tree manager that sees a newer generation than the one its current
// path ran in may end that path and free (and poison) the outputs still held from it.
#pragma once

#include <cstdint>

namespace grove::graphs {

// Marks the start of a new step (iteration) for every tree manager on this thread.
void mark_step_begin();

// The generation the manager compares against (invocation count, or the mark-step count once
// mark_step_begin() has been called).
std::uint64_t current_generation();
bool user_marked_steps();

// Counts a managed call; the outermost one on the thread advances the generation unless
// `advances_generation` is false (backward calls).
class InvocationScope {
 public:
  explicit InvocationScope(bool advances_generation = true);
  ~InvocationScope();
  InvocationScope(const InvocationScope&) = delete;
  InvocationScope& operator=(const InvocationScope&) = delete;
  bool is_top_level() const { return top_level_; }

 private:
  bool top_level_;
};

}  // namespace grove::graphs
