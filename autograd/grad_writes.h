// GradWriteLog: which leaves' grad() a piece of code wrote, and whether each was defined
// before the first write.
//
// compile() needs it for whole training steps (graphs/compile/traced_function.h): whether a
// leaf's gradient is defined when a step begins decides what accumulation does (adopt the new
// gradient, or add into the old one), so a trace holds only for calls that begin in the same
// state. Writes are Tensor::set_grad and accumulation (AccumulateGrad, retain_grad()).
#pragma once

#include <vector>

#include "core/tensor.h"

namespace grove::autograd {

struct GradWrite {
  Tensor leaf;
  bool defined_before;  // grad() was defined before the first logged write
};

// While alive, logs the grad() writes of this thread (the first per leaf). Nests: an inner log
// sees the writes made while it is the innermost.
class GradWriteLog {
 public:
  GradWriteLog();
  ~GradWriteLog();
  GradWriteLog(const GradWriteLog&) = delete;
  GradWriteLog& operator=(const GradWriteLog&) = delete;

  const std::vector<GradWrite>& writes() const { return writes_; }

 private:
  friend void note_grad_write(const Tensor& leaf);
  std::vector<GradWrite> writes_;
  GradWriteLog* previous_;
};

// Called before a write into `leaf`'s grad(); does nothing unless a log is alive.
void note_grad_write(const Tensor& leaf);

}  // namespace grove::autograd
