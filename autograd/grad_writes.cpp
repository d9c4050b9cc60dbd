// GradWriteLog: see grad_writes.h.
#include "autograd/grad_writes.h"

#include <algorithm>

namespace grove::autograd {
namespace {

thread_local GradWriteLog* innermost = nullptr;

}  // namespace

GradWriteLog::GradWriteLog() : previous_(innermost) {
  innermost = this;
}

GradWriteLog::~GradWriteLog() {
  innermost = previous_;
}

void note_grad_write(const Tensor& leaf) {
  GradWriteLog* log = innermost;
  if (log == nullptr) return;
  const bool seen = std::any_of(log->writes_.begin(), log->writes_.end(),
                                [&](const GradWrite& w) { return w.leaf.impl() == leaf.impl(); });
  if (!seen) log->writes_.push_back({leaf, leaf.grad().defined()});
}

}  // namespace grove::autograd
