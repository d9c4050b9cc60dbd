// Learning-rate schedules: the rate as a function of the step number, and apply(), which writes
// it into an optimizer with set_lr() (a fill_ of the optimizer's lr tensor, no host sync).
//
// Not here: schedules that depend on metrics (reduce-on-plateau); chaining schedules.
//
// Steps are counted from 0: lr_at(0) is the rate of the first optimizer step. A training loop
// calls schedule.apply(optimizer, step) before step number `step`, outside any compiled step
// (see Note [Optimizer state lives on the device] in optimizer.h). Schedules are immutable after
// construction, so one may be read from several threads.
#pragma once

#include <cstdint>

#include "models/optim/optimizer.h"

namespace grove::optim {

class LrSchedule {
 public:
  virtual ~LrSchedule() = default;
  // The learning rate for step `step` (>= 0; a negative step is an error).
  virtual double lr_at(std::int64_t step) const = 0;
  // optimizer.set_lr(lr_at(step)).
  void apply(Optimizer& optimizer, std::int64_t step) const;
};

// The same rate at every step.
class ConstantLr : public LrSchedule {
 public:
  explicit ConstantLr(double lr);  // lr finite, >= 0
  double lr_at(std::int64_t step) const override;

 private:
  double lr_;
};

// Linear warm-up, then a half cosine down to min_lr (nanoGPT's schedule):
//   step < warmup_steps:                 base_lr * (step + 1) / warmup_steps
//   warmup_steps <= step < total_steps:  min_lr + (base_lr - min_lr) * (1 + cos(pi * p)) / 2,
//                                        p = (step - warmup_steps) / (total_steps - warmup_steps)
//   step >= total_steps:                 min_lr
// So the warm-up reaches base_lr at step warmup_steps - 1, the decay starts from base_lr at step
// warmup_steps, and the rate is min_lr from step total_steps on. warmup_steps 0: no warm-up.
// Needs base_lr finite and >= 0, 0 <= min_lr <= base_lr, 0 <= warmup_steps <= total_steps,
// total_steps >= 1.
class WarmupCosineLr : public LrSchedule {
 public:
  WarmupCosineLr(double base_lr, std::int64_t warmup_steps, std::int64_t total_steps,
                 double min_lr = 0.0);
  double lr_at(std::int64_t step) const override;

 private:
  double base_lr_;
  std::int64_t warmup_steps_;
  std::int64_t total_steps_;
  double min_lr_;
};

// The rate multiplied by gamma every step_size steps (PyTorch's StepLR):
//   base_lr * gamma^floor(step / step_size)
// Needs base_lr finite and >= 0, step_size >= 1, 0 < gamma <= 1.
class StepLr : public LrSchedule {
 public:
  StepLr(double base_lr, std::int64_t step_size, double gamma);
  double lr_at(std::int64_t step) const override;

 private:
  double base_lr_;
  std::int64_t step_size_;
  double gamma_;
};

}  // namespace grove::optim
