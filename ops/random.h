// Random ops: the factories rand, randn and randint, and dropout. All draw from a Philox
// generator (core/rng.h): the one passed in, or the default generator of the output's device.
//
// Determinism: the same seed (manual_seed, or Generator::manual_seed) and the same sequence of
// calls give the same numbers; each call advances the generator, so successive calls differ.
// Element values depend on the element's row-major index only (ops/cpu/random.h lists which
// Philox words each element uses).
//
// Capture: random kernels reserve their counters on the host and resolve the seed and offset
// inside the kernel, so a captured graph draws fresh numbers on every replay
// (Note [Random numbers in captured graphs]). That works for the default generator, which
// DeviceGraph hands the capture's cell; a random op given another generator while its stream
// captures is an error, because its numbers would be baked into the graph and repeat on every
// replay.
//
// None of these ops synchronises the host. Outputs are new contiguous tensors, except that
// dropout in eval mode or with p = 0 returns its input itself.
#pragma once

#include "core/rng.h"
#include "core/tensor.h"
#include "ops/dispatch.h"

namespace grove::ops {

// U[0, 1) in options' dtype (float32 or float64) on options' device.
Tensor rand(IntArrayRef sizes, TensorOptions options = {}, Generator* generator = nullptr);
// N(0, 1) by Box-Muller, float32 or float64.
Tensor randn(IntArrayRef sizes, TensorOptions options = {}, Generator* generator = nullptr);
// Integers uniform in [low, high), int64 (64 random bits reduced modulo high - low: the bias is
// at most (high - low) / 2^64, invisible for any range a model uses).
Tensor randint(std::int64_t low, std::int64_t high, IntArrayRef sizes,
               Generator* generator = nullptr, Device device = kCPU);

// Zeroes each element with probability p and scales the others by 1 / (1 - p), so E[output] = x.
// In eval mode (train false) or with p = 0 it returns x itself. p must be in [0, 1).
// The op has two outputs, the result and a bool mask (true where kept) for the backward pass:
//   d(output)/dx = mask / (1 - p).
Tensor dropout(const Tensor& x, double p, bool train = true, Generator* generator = nullptr);

namespace detail {
// For random kernels of every device: reserves `counters` Philox counters from the call's
// generator (or `device`'s default one) on the host. Throws if the current stream captures but
// the generator is not serving the capture (its numbers would repeat on every replay).
PhiloxArgs reserve_philox(const OpCall& call, Device device, std::uint64_t counters);
}  // namespace detail

}  // namespace grove::ops
