// gradcheck: compares autograd's gradients with central finite differences.
//
// For f(inputs) -> output, every floating-point input that requires gradients is checked:
// the numerical Jacobian column for input element j is (f(x + eps e_j) - f(x - eps e_j)) / 2eps,
// and the analytical Jacobian row for output element i is the gradient that backward gives
// for the output gradient e_i (a vector-Jacobian product). They must agree within
// atol + rtol * |numerical| everywhere. Inputs must be float64 (float32 differences are too
// coarse to say anything), and must not be expanded views (one memory location would stand for
// several elements). Inputs may live on any device (a CUDA gradcheck runs the function and its
// backward there): each perturbation is a one-element fill_ on the input's device, and outputs
// and gradients are copied to the host to be compared.
//
// Cost: 2 forward calls per input element and 1 backward per output element, so keep the
// tensors small (tens to a few hundred elements).
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace grove::autograd {

struct GradcheckOptions {
  double eps = 1e-6;   // finite-difference step
  double atol = 1e-5;  // absolute tolerance
  double rtol = 1e-3;  // relative tolerance (to the numerical value)
};

struct GradcheckResult {
  bool ok = true;
  // On failure: which input and output, the worst element and how many were off.
  std::string report;
};

using GradcheckFn = std::function<Tensor(std::span<const Tensor> inputs)>;

GradcheckResult gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                          GradcheckOptions options = {});

}  // namespace grove::autograd
