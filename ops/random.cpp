// Random ops: argument checks, output shapes and the user functions; kernels are in
// ops/cpu/random.cpp and ops/cuda/random.cu.
//
// Attributes (ops/attributes.h): rand and randn take FactoryAttributes, randint
// RandintAttributes (both carry the device, which a factory has no input to take from), dropout
// DropoutAttributes.
#include "ops/random.h"

#include <cmath>

#include "core/stream.h"
#include "ops/attributes.h"
#include "ops/cpu/random.h"
#include "ops/cuda/random.h"
#include "ops/op_table.h"

namespace grove::ops {
namespace {

void check_sizes(const OpCall& call, IntArrayRef sizes) {
  for (std::int64_t size : sizes) {
    GROVE_OP_CHECK(call, size >= 0, "sizes must be non-negative, but got ", sizes);
  }
  // Here rather than in the output's empty(), so that the error names this op.
  const std::string name(op_name(call.kind));
  ::grove::check_sizes(sizes, name.c_str());
}

void infer_floating_factory(const OpCall& call, OutputSpecs& outputs) {
  const FactoryAttributes a = FactoryAttributes::from(call.attributes);
  GROVE_OP_CHECK(call, is_floating_point(a.dtype), "expected a floating-point dtype, but got ",
                 a.dtype, "; use randint for integers");
  outputs.device = a.device;
  check_sizes(call, a.sizes);
  outputs.add(a.sizes, a.dtype);
}

void infer_randint(const OpCall& call, OutputSpecs& outputs) {
  const RandintAttributes a = RandintAttributes::from(call.attributes);
  GROVE_OP_CHECK(call, a.low < a.high, "expected low < high, but got low = ", a.low,
                 " and high = ", a.high, " (the range [low, high) must not be empty)");
  outputs.device = a.device;
  check_sizes(call, a.sizes);
  outputs.add(a.sizes, DType::Int64);
}

void check_probability(const OpCall& call, double p) {
  GROVE_OP_CHECK(call, p >= 0.0 && p < 1.0, "expected a probability p in [0, 1), but got ", p);
}

void infer_dropout(const OpCall& call, OutputSpecs& outputs) {
  const Tensor& x = call.input(0);
  GROVE_OP_CHECK(call, is_floating_point(x.dtype()), "expected a floating-point input, but got ",
                 x.dtype());
  check_probability(call, DropoutAttributes::from(call.attributes).p);
  outputs.add(x.sizes(), x.dtype());
  outputs.add(x.sizes(), DType::Bool);
}

// FactoryAttributes (randint: RandintAttributes).
constexpr InputSpec kDropoutInputs[] = {{"x"}};

// Factories: no inputs; FactoryAttributes and RandintAttributes.
constexpr OpEntry kRand{.kind = OpKind::Rand,
                        .inputs = {},
                        .infer = infer_floating_factory,
                        .cpu = cpu::rand,
                        .cuda = GROVE_CUDA_KERNEL(rand),
                        .describe = describe_as<FactoryAttributes>};
constexpr OpEntry kRandn{.kind = OpKind::Randn,
                         .inputs = {},
                         .infer = infer_floating_factory,
                         .cpu = cpu::randn,
                         .cuda = GROVE_CUDA_KERNEL(randn),
                         .describe = describe_as<FactoryAttributes>};
constexpr OpEntry kRandint{.kind = OpKind::Randint,
                           .inputs = {},
                           .infer = infer_randint,
                           .cpu = cpu::randint,
                           .cuda = GROVE_CUDA_KERNEL(randint),
                           .describe = describe_as<RandintAttributes>};
// DropoutAttributes; outputs: result, bool keep mask.
constexpr OpEntry kDropout{.kind = OpKind::Dropout,
                           .inputs = kDropoutInputs,
                           .infer = infer_dropout,
                           .cpu = cpu::dropout,
                           .cuda = GROVE_CUDA_KERNEL(dropout),
                           .describe = describe_as<DropoutAttributes>};

Tensor floating_factory(const OpEntry& entry, IntArrayRef sizes, const TensorOptions& options,
                        Generator* generator) {
  const FactoryAttributes attributes{options.device(), DimVector(sizes), options.dtype(),
                                     generator};
  Tensor result = dispatch(entry, {}, attributes.to_attributes())[0];
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
  const RandintAttributes attributes{device, low, high, DimVector(sizes), generator};
  return dispatch(kRandint, {}, attributes.to_attributes())[0];
}

Tensor dropout(const Tensor& x, double p, bool train, Generator* generator) {
  GROVE_CHECK(x.defined(), "dropout: the input is undefined");
  GROVE_CHECK(p >= 0.0 && p < 1.0, "dropout: expected a probability p in [0, 1), but got ", p,
              " (inputs: ", x.dtype(), x.sizes(), ")");
  if (!train || p == 0.0) return x;
  return dispatch(kDropout, {x}, DropoutAttributes{p, generator}.to_attributes())[0];
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
