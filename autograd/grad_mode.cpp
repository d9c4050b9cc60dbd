// Grad mode: one thread-local flag.
#include "autograd/grad_mode.h"

namespace grove::autograd {
namespace {
thread_local bool grad_enabled = true;
}  // namespace

bool GradMode::is_enabled() {
  return grad_enabled;
}

void GradMode::set_enabled(bool enabled) {
  grad_enabled = enabled;
}

}  // namespace grove::autograd
