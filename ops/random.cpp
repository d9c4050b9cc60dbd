// Random ops: argument checks, output shapes and the user functions; kernels are in
// ops/cpu/random.cpp and ops/cuda/random.cu.
//
// Factories have no inputs to take a device from, and OpAttributes has no device field, so the
// device travels at the front of `ints`: ints = [device type, device index, sizes...] (randint:
// [device type, device index, low, high, sizes...]).
#include "ops/random.h"

#include <cmath>

#include "core/stream.h"
#include "ops/cpu/random.h"
#include "ops/cuda/random.h"
#include "ops/op_table.h"

namespace grove::ops {
namespace {

constexpr std::size_t kDeviceInts = 2;

void append_device(OpAttributes& attributes, Device device) {
  attributes.ints.push_back(static_cast<std::int64_t>(device.type));
  attributes.ints.push_back(device.index);
}

Device device_of(const OpCall& call) {
  const DimVector& ints = call.attributes.ints;
  GROVE_INTERNAL_ASSERT(ints.size() >= kDeviceInts, "factory attributes lack the device");
  return Device(static_cast<DeviceType>(ints[0]), static_cast<int>(ints[1]));
}

// The sizes stored after the first `skip` ints, checked.
DimVector factory_sizes(const OpCall& call, std::size_t skip) {
  const DimVector& ints = call.attributes.ints;
  DimVector sizes(IntArrayRef(ints.data() + skip, ints.size() - skip));
  for (std::int64_t size : sizes) {
    GROVE_OP_CHECK(call, size >= 0, "sizes must be non-negative, but got ", IntArrayRef(sizes));
  }
  return sizes;
}

void infer_floating_factory(const OpCall& call, OutputSpecs& outputs) {
  const DType dtype = call.attributes.dtype;
  GROVE_OP_CHECK(call, is_floating_point(dtype), "expected a floating-point dtype, but got ", dtype,
                 "; use randint for integers");
  outputs.device = device_of(call);
  outputs.add(factory_sizes(call, kDeviceInts), dtype);
}

void infer_randint(const OpCall& call, OutputSpecs& outputs) {
  const std::int64_t low = call.attributes.ints[kDeviceInts];
  const std::int64_t high = call.attributes.ints[kDeviceInts + 1];
  GROVE_OP_CHECK(call, low < high, "expected low < high, but got low = ", low, " and high = ", high,
                 " (the range [low, high) must not be empty)");
  outputs.device = device_of(call);
  outputs.add(factory_sizes(call, kDeviceInts + 2), DType::Int64);
}

void check_probability(const OpCall& call, double p) {
  GROVE_OP_CHECK(call, p >= 0.0 && p < 1.0, "expected a probability p in [0, 1), but got ", p);
}

void infer_dropout(const OpCall& call, OutputSpecs& outputs) {
  const Tensor& x = call.input(0);
  GROVE_OP_CHECK(call, is_floating_point(x.dtype()), "expected a floating-point input, but got ",
                 x.dtype());
  check_probability(call, call.attributes.reals[0]);
  outputs.add(x.sizes(), x.dtype());
  outputs.add(x.sizes(), DType::Bool);
}

// ints: see the top of this file; dtype: output dtype; generator: null for the default one.
constexpr OpEntry kRand{OpKind::Rand, infer_floating_factory, cpu::rand, GROVE_CUDA_KERNEL(rand)};
constexpr OpEntry kRandn{OpKind::Randn, infer_floating_factory, cpu::randn,
                         GROVE_CUDA_KERNEL(randn)};
constexpr OpEntry kRandint{OpKind::Randint, infer_randint, cpu::randint,
                           GROVE_CUDA_KERNEL(randint)};
// reals[0]: p; flag: training (always true when dispatched); outputs: result, bool keep mask.
constexpr OpEntry kDropout{OpKind::Dropout, infer_dropout, cpu::dropout,
                           GROVE_CUDA_KERNEL(dropout)};

Tensor floating_factory(const OpEntry& entry, IntArrayRef sizes, const TensorOptions& options,
                        Generator* generator) {
  OpAttributes attributes;
  append_device(attributes, options.device());
  for (std::int64_t size : sizes) attributes.ints.push_back(size);
  attributes.dtype = options.dtype();
  attributes.generator = generator;
  Tensor result = dispatch(entry, {}, attributes)[0];
  if (options.requires_grad()) result.requires_grad_(true);
  return result;
}

}  // namespace

Tensor rand(IntArrayRef sizes, TensorOptions options, Generator* generator) {
  return floating_factory(kRand, sizes, options, generator);
}

Tensor randn(IntArrayRef sizes, TensorOptions options, Generator* generator) {
  return floating_factory(kRandn, sizes, options, generator);
}

Tensor randint(std::int64_t low, std::int64_t high, IntArrayRef sizes, Generator* generator,
               Device device) {
  OpAttributes attributes;
  append_device(attributes, device);
  attributes.ints.push_back(low);
  attributes.ints.push_back(high);
  for (std::int64_t size : sizes) attributes.ints.push_back(size);
  attributes.dtype = DType::Int64;
  attributes.generator = generator;
  return dispatch(kRandint, {}, attributes)[0];
}

Tensor dropout(const Tensor& x, double p, bool train, Generator* generator) {
  GROVE_CHECK(x.defined(), "dropout: the input is undefined");
  GROVE_CHECK(p >= 0.0 && p < 1.0, "dropout: expected a probability p in [0, 1), but got ", p,
              " (inputs: ", x.dtype(), x.sizes(), ")");
  if (!train || p == 0.0) return x;
  OpAttributes attributes;
  attributes.reals[0] = p;
  attributes.flag = true;
  attributes.generator = generator;
  return dispatch(kDropout, {x}, attributes)[0];
}

std::span<const OpEntry> random_entries() {
  static constexpr OpEntry kEntries[] = {kRand, kRandn, kRandint, kDropout};
  return kEntries;
}

namespace detail {

PhiloxArgs reserve_philox(const OpCall& call, Device device, std::uint64_t counters) {
  Generator& generator =
      call.attributes.generator != nullptr ? *call.attributes.generator : default_generator(device);
  const PhiloxArgs args = generator.reserve(counters);
  const bool capturing = is_capturing(current_stream(device));
  GROVE_OP_CHECK(call, args.cell != nullptr || !capturing,
                 "the stream is capturing a graph, but the generator given is not serving the "
                 "capture, so every replay would repeat the same numbers; use the device's "
                 "default generator inside captured code (see "
                 "Note [Random numbers in captured graphs] in core/rng.h)");
  // The default generator serves a capture process-wide; an op on a stream that is not
  // capturing would run now with offsets relative to the capture's cell, which holds no seed
  // until the graph's first replay, and would repeat the numbers of that replay.
  GROVE_OP_CHECK(call, args.cell == nullptr || capturing,
                 "a graph capture on another stream holds the default generator of this device, "
                 "so an op that runs now cannot draw from it; pass a Generator of its own, or run "
                 "it before or after the capture");
  return args;
}

}  // namespace detail
}  // namespace grove::ops
