// Grad mode: whether ops record a backward graph on this thread (PyTorch's torch.no_grad()).
//
// Thread-local and on by default. Optimizer updates, evaluation and the backward engine itself
// run with it off. Guards restore the previous mode when they go out of scope, so they nest.
#pragma once

namespace grove::autograd {

class GradMode {
 public:
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

// Turns recording off for the guard's lifetime: ops in its scope make no graph, and their
// outputs do not require gradients.
class NoGradGuard {
 public:
  NoGradGuard() : previous_(GradMode::is_enabled()) { GradMode::set_enabled(false); }
  ~NoGradGuard() { GradMode::set_enabled(previous_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// Turns recording on for the guard's lifetime (inside a NoGradGuard scope).
class EnableGradGuard {
 public:
  EnableGradGuard() : previous_(GradMode::is_enabled()) { GradMode::set_enabled(true); }
  ~EnableGradGuard() { GradMode::set_enabled(previous_); }
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace grove::autograd
