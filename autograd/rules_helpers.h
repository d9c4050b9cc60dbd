// Small helpers shared by the derivative rules (autograd/rules_*.cpp). Internal to autograd.
#pragma once

#include "autograd/derivatives.h"

namespace grove::autograd::rules {

// A 0-d zero of `like`'s dtype and device, which broadcasts in where().
Tensor zero_scalar(const Tensor& like);

// grad expanded back over the dims a reduction removed: `dims` as the op got them (possibly
// negative, empty for "every dim"), `keepdim` as the op got it; `sizes` the input's shape.
Tensor expand_reduced(const Tensor& grad, IntArrayRef sizes, IntArrayRef dims, bool keepdim);

// Number of input elements that fed each output element of a reduction over `dims`.
std::int64_t reduced_count(IntArrayRef sizes, IntArrayRef dims);

}  // namespace grove::autograd::rules

// Declares a rule: `GROVE_BACKWARD(mul)` defines mul_backward(ctx, grads).
#define GROVE_BACKWARD(name)                                                           \
  void name##_backward([[maybe_unused]] const ::grove::autograd::BackwardContext& ctx, \
                       [[maybe_unused]] ::grove::autograd::InputGrads& grads)
