// Learning-rate schedules: argument checks and the formulas of schedule.h.
#include "models/optim/schedule.h"

#include <cmath>
#include <numbers>

#include "core/error.h"

namespace grove::optim {
namespace {

void check_rate(const char* schedule, const char* name, double lr) {
  GROVE_CHECK(std::isfinite(lr) && lr >= 0, schedule, ": expected ", name,
              " finite and >= 0, but got ", lr);
}

void check_step(std::int64_t step) {
  GROVE_CHECK(step >= 0, "lr_at: expected a step number >= 0 (steps count from 0), but got ", step);
}

}  // namespace

void LrSchedule::apply(Optimizer& optimizer, std::int64_t step) const {
  optimizer.set_lr(lr_at(step));
}

ConstantLr::ConstantLr(double lr) : lr_(lr) {
  check_rate("ConstantLr", "lr", lr);
}

double ConstantLr::lr_at(std::int64_t step) const {
  check_step(step);
  return lr_;
}

WarmupCosineLr::WarmupCosineLr(double base_lr, std::int64_t warmup_steps, std::int64_t total_steps,
                               double min_lr)
    : base_lr_(base_lr), warmup_steps_(warmup_steps), total_steps_(total_steps), min_lr_(min_lr) {
  check_rate("WarmupCosineLr", "base_lr", base_lr);
  check_rate("WarmupCosineLr", "min_lr", min_lr);
  GROVE_CHECK(min_lr <= base_lr, "WarmupCosineLr: expected min_lr <= base_lr, but got min_lr ",
              min_lr, " and base_lr ", base_lr);
  GROVE_CHECK(total_steps >= 1, "WarmupCosineLr: expected total_steps >= 1, but got ", total_steps);
  GROVE_CHECK(warmup_steps >= 0 && warmup_steps <= total_steps,
              "WarmupCosineLr: expected 0 <= warmup_steps <= total_steps (", total_steps,
              "), but got warmup_steps ", warmup_steps);
}

double WarmupCosineLr::lr_at(std::int64_t step) const {
  check_step(step);
  if (step < warmup_steps_) {
    return base_lr_ * static_cast<double>(step + 1) / static_cast<double>(warmup_steps_);
  }
  if (step >= total_steps_) return min_lr_;
  const double progress =
      static_cast<double>(step - warmup_steps_) / static_cast<double>(total_steps_ - warmup_steps_);
  return min_lr_ + (base_lr_ - min_lr_) * 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
}

StepLr::StepLr(double base_lr, std::int64_t step_size, double gamma)
    : base_lr_(base_lr), step_size_(step_size), gamma_(gamma) {
  check_rate("StepLr", "base_lr", base_lr);
  GROVE_CHECK(step_size >= 1, "StepLr: expected step_size >= 1, but got ", step_size);
  GROVE_CHECK(std::isfinite(gamma) && gamma > 0, "StepLr: expected gamma finite and > 0, but got ",
              gamma, "; e.g. 0.1 divides the rate by 10 every step_size steps");
  // A decay: a gamma above 1 would grow the rate without bound (to infinity, in ~700 steps of
  // 2.0), and no step would say so.
  GROVE_CHECK(gamma <= 1, "StepLr decays the rate: expected gamma <= 1, but got ", gamma,
              "; it multiplies the rate every step_size steps, so the rate would grow without "
              "bound");
}

double StepLr::lr_at(std::int64_t step) const {
  check_step(step);
  return base_lr_ * std::pow(gamma_, static_cast<double>(step / step_size_));
}

}  // namespace grove::optim
