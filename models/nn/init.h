// Parameter initialisers (torch.nn.init's names and formulas): fill a tensor in place with
// values drawn from a generator (null: the default generator of the tensor's device, so
// manual_seed makes a model's initial weights reproducible).
//
// Not modules and not autograd ops: each runs under no-grad, so it may fill a parameter (a leaf
// requiring gradients) without recording anything. Each bumps the tensor's version counter.
// Floating-point tensors only; nothing here synchronises the host.
#pragma once

#include <cstdint>

#include "core/rng.h"
#include "core/tensor.h"

namespace grove::nn::init {

// x[i] ~ U[low, high).
void uniform_(const Tensor& x, double low, double high, Generator* generator = nullptr);
// x[i] ~ N(mean, std^2).
void normal_(const Tensor& x, double mean, double std, Generator* generator = nullptr);
void zeros_(const Tensor& x);
void ones_(const Tensor& x);

// The fan-in of a weight (out, in, k...): in times the product of the kernel dims. A weight
// needs at least 2 dims.
std::int64_t fan_in(const Tensor& weight);
// He et al.'s uniform init for a leaky-ReLU slope `a`: U(-bound, bound) with
//   bound = gain * sqrt(3 / fan_in),  gain = sqrt(2 / (1 + a^2)).
// With a = sqrt(5) (PyTorch's Linear and Conv default) bound = 1 / sqrt(fan_in).
void kaiming_uniform_(const Tensor& weight, double a, Generator* generator = nullptr);
// The bound PyTorch's Linear and Conv use for their bias: 1 / sqrt(fan_in), 0 when fan_in is 0.
double bias_bound(std::int64_t fan_in);

}  // namespace grove::nn::init
