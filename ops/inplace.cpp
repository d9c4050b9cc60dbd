// In-place updates: argument checks and the user functions. Every op here sets
// OutputSpecs::in_place, so dispatch() returns input 0, refuses an expanded target and bumps its
// version. Kernels are in ops/cpu/inplace.cpp.
#include "ops/inplace.h"

#include <cmath>

#include "ops/attributes.h"
#include "ops/broadcast.h"
#include "ops/cpu/inplace.h"
#include "ops/cuda/inplace.h"
#include "ops/cuda/random.h"
#include "ops/dispatch.h"
#include "ops/op_table.h"

namespace grove::ops {
namespace {

// A scalar must fit the target's dtype without losing its meaning.
void check_scalar_fits(const OpCall& call, const Scalar& scalar, DType dtype, const char* what) {
  GROVE_OP_CHECK(call, is_floating_point(dtype) || !scalar.is_floating_point(), "a floating-point ",
                 what, " (", scalar, ") cannot be applied to a ", dtype,
                 " tensor without truncating it");
  GROVE_OP_CHECK(call, scalar.fits(dtype), "the ", what, " ", scalar, " does not fit a ", dtype,
                 " tensor");
}

void check_numeric(const OpCall& call, DType dtype) {
  GROVE_OP_CHECK(call, dtype != DType::Bool, "expected a numeric tensor to update, but got ",
                 dtype);
}

void check_floating(const OpCall& call, DType dtype) {
  GROVE_OP_CHECK(call, is_floating_point(dtype),
                 "expected a floating-point tensor to update, but got ", dtype);
}

// Tensor operand `index` must have x's dtype and broadcast to x's shape.
void check_operand(const OpCall& call, std::size_t index) {
  const Tensor& x = call.input(0);
  const Tensor& operand = call.input(index);
  GROVE_OP_CHECK(call, operand.dtype() == x.dtype(), "expected operand ", index,
                 " to have the target's dtype ", x.dtype(), ", but got ", operand.dtype(),
                 "; convert it with to(dtype)");
  GROVE_OP_CHECK(call, broadcast_shapes(call, x.sizes(), operand.sizes()) == x.sizes(), "operand ",
                 index, " of shape ", operand.sizes(), " does not broadcast to the target's shape ",
                 x.sizes(), " (an in-place op cannot change its target's shape)");
}

void infer_add(const OpCall& call, OutputSpecs& outputs) {
  check_numeric(call, call.input(0).dtype());
  check_operand(call, 1);
  check_scalar_fits(call, call.attributes.scalar, call.input(0).dtype(), "alpha");
  outputs.in_place = true;
}

void infer_mul(const OpCall& call, OutputSpecs& outputs) {
  check_numeric(call, call.input(0).dtype());
  if (call.attributes.has_scalar) {
    check_scalar_fits(call, call.attributes.scalar, call.input(0).dtype(), "scalar");
  } else {
    check_operand(call, 1);
  }
  outputs.in_place = true;
}

void infer_addcmul(const OpCall& call, OutputSpecs& outputs) {
  check_numeric(call, call.input(0).dtype());
  check_operand(call, 1);
  check_operand(call, 2);
  check_scalar_fits(call, call.attributes.scalar, call.input(0).dtype(), "value");
  outputs.in_place = true;
}

void infer_addcdiv(const OpCall& call, OutputSpecs& outputs) {
  check_floating(call, call.input(0).dtype());
  check_operand(call, 1);
  check_operand(call, 2);
  outputs.in_place = true;
}

void infer_lerp(const OpCall& call, OutputSpecs& outputs) {
  check_floating(call, call.input(0).dtype());
  for (std::size_t i = 1; i < call.inputs.size(); ++i) check_operand(call, i);
  outputs.in_place = true;
}

void infer_fill(const OpCall& call, OutputSpecs& outputs) {
  check_scalar_fits(call, call.attributes.scalar, call.input(0).dtype(), "fill value");
  outputs.in_place = true;
}

void infer_copy(const OpCall& call, OutputSpecs& outputs) {
  const Tensor& x = call.input(0);
  const Tensor& src = call.input(1);
  GROVE_OP_CHECK(call, broadcast_shapes(call, x.sizes(), src.sizes()) == x.sizes(),
                 "the source of shape ", src.sizes(), " does not broadcast to the target's shape ",
                 x.sizes());
  outputs.in_place = true;
}

void infer_uniform(const OpCall& call, OutputSpecs& outputs) {
  check_floating(call, call.input(0).dtype());
  const auto [low, high, generator] = UniformAttributes::from(call.attributes);
  GROVE_OP_CHECK(call, std::isfinite(low) && std::isfinite(high) && low <= high,
                 "expected finite bounds with low <= high, but got low = ", low,
                 " and high = ", high);
  GROVE_OP_CHECK(call, std::isfinite(high - low), "the range [", low, ", ", high,
                 ") is wider than a double can hold");
  outputs.in_place = true;
}

void infer_normal(const OpCall& call, OutputSpecs& outputs) {
  check_floating(call, call.input(0).dtype());
  const auto [mean, std, generator] = NormalAttributes::from(call.attributes);
  GROVE_OP_CHECK(call, std::isfinite(mean) && std::isfinite(std) && std >= 0.0,
                 "expected a finite mean and a finite std >= 0, but got mean = ", mean,
                 " and std = ", std);
  outputs.in_place = true;
}

// Inputs are (x, operands...). Attributes: scalar is alpha (add_), the factor (mul_ with
// has_scalar), value (addcmul_, addcdiv_), the weight (lerp_ with two inputs) or the fill value;
// uniform_ and normal_ take UniformAttributes and NormalAttributes (ops/attributes.h).
constexpr InputSpec kAddInputs[] = {{"x", InputDTypes::Numeric}, {"other", InputDTypes::Numeric}};
constexpr InputSpec kMulInputs[] = {{"x", InputDTypes::Numeric}, {"other", InputDTypes::Numeric}};
constexpr InputSpec kAddcInputs[] = {{"x", InputDTypes::Numeric},
                                     {"tensor1", InputDTypes::Numeric},
                                     {"tensor2", InputDTypes::Numeric}};
constexpr InputSpec kAddcdivInputs[] = {{"x"}, {"tensor1"}, {"tensor2"}};
constexpr InputSpec kLerpInputs[] = {{"x"}, {"end"}, {"weight", InputDTypes::Floating, true}};
constexpr InputSpec kFillInputs[] = {{"x", InputDTypes::Any}};
constexpr InputSpec kCopyInputs[] = {{"x", InputDTypes::Any}, {"src", InputDTypes::Any}};
constexpr InputSpec kRandomInputs[] = {{"x"}};

std::string describe_alpha(const OpAttributes& a) {
  return describe_scalar("alpha", a);
}
std::string describe_value(const OpAttributes& a) {
  return describe_scalar("value", a);
}
std::string describe_lerp(const OpAttributes& a) {
  return a.has_scalar ? describe_scalar("weight", a) : std::string();
}

constexpr OpEntry kAddInplace{.kind = OpKind::AddInplace,
                              .inputs = kAddInputs,
                              .infer = infer_add,
                              .cpu = cpu::update,
                              .cuda = GROVE_CUDA_KERNEL(update),
                              .describe = describe_alpha,
                              .cuda_takes_reduced = true};
constexpr OpEntry kMulInplace{.kind = OpKind::MulInplace,
                              .inputs = kMulInputs,
                              .infer = infer_mul,
                              .cpu = cpu::update,
                              .cuda = GROVE_CUDA_KERNEL(update),
                              .describe = describe_scalar_operand,
                              .input_count = binary_input_count,
                              .cuda_takes_reduced = true};
constexpr OpEntry kAddcmul{.kind = OpKind::Addcmul,
                           .inputs = kAddcInputs,
                           .infer = infer_addcmul,
                           .cpu = cpu::update,
                           .cuda = GROVE_CUDA_KERNEL(update),
                           .describe = describe_value,
                           .cuda_takes_reduced = true};
constexpr OpEntry kAddcdiv{.kind = OpKind::Addcdiv,
                           .inputs = kAddcdivInputs,
                           .infer = infer_addcdiv,
                           .cpu = cpu::update,
                           .cuda = GROVE_CUDA_KERNEL(update),
                           .describe = describe_value,
                           .cuda_takes_reduced = true};
constexpr OpEntry kLerp{.kind = OpKind::Lerp,
                        .inputs = kLerpInputs,
                        .infer = infer_lerp,
                        .cpu = cpu::update,
                        .cuda = GROVE_CUDA_KERNEL(update),
                        .describe = describe_lerp,
                        .cuda_takes_reduced = true};
constexpr OpEntry kFill{.kind = OpKind::Fill,
                        .inputs = kFillInputs,
                        .infer = infer_fill,
                        .cpu = cpu::fill,
                        .cuda = GROVE_CUDA_KERNEL(fill),
                        .describe = describe_value};
constexpr OpEntry kCopy{.kind = OpKind::Copy,
                        .inputs = kCopyInputs,
                        .infer = infer_copy,
                        .cpu = cpu::copy,
                        .cuda = GROVE_CUDA_KERNEL(copy)};
constexpr OpEntry kUniform{.kind = OpKind::Uniform,
                           .inputs = kRandomInputs,
                           .infer = infer_uniform,
                           .cpu = cpu::uniform,
                           .cuda = GROVE_CUDA_KERNEL(uniform),
                           .describe = describe_as<UniformAttributes>};
constexpr OpEntry kNormal{.kind = OpKind::Normal,
                          .inputs = kRandomInputs,
                          .infer = infer_normal,
                          .cpu = cpu::normal,
                          .cuda = GROVE_CUDA_KERNEL(normal),
                          .describe = describe_as<NormalAttributes>};

const Tensor& run(const OpEntry& entry, const Tensor& x, std::initializer_list<Tensor> inputs,
                  const OpAttributes& attributes) {
  dispatch(entry, inputs, attributes);
  return x;
}

OpAttributes with_scalar(const Scalar& scalar, bool has_scalar = false) {
  OpAttributes attributes;
  attributes.scalar = scalar;
  attributes.has_scalar = has_scalar;
  return attributes;
}

}  // namespace

const Tensor& add_(const Tensor& x, const Tensor& y, const Scalar& alpha) {
  return run(kAddInplace, x, {x, y}, with_scalar(alpha));
}

const Tensor& mul_(const Tensor& x, const Tensor& y) {
  return run(kMulInplace, x, {x, y}, {});
}

const Tensor& mul_(const Tensor& x, const Scalar& value) {
  return run(kMulInplace, x, {x}, with_scalar(value, true));
}

const Tensor& addcmul_(const Tensor& x, const Tensor& a, const Tensor& b, const Scalar& value) {
  return run(kAddcmul, x, {x, a, b}, with_scalar(value));
}

const Tensor& addcdiv_(const Tensor& x, const Tensor& a, const Tensor& b, const Scalar& value) {
  return run(kAddcdiv, x, {x, a, b}, with_scalar(value));
}

const Tensor& lerp_(const Tensor& x, const Tensor& end, double weight) {
  return run(kLerp, x, {x, end}, with_scalar(weight, true));
}

const Tensor& lerp_(const Tensor& x, const Tensor& end, const Tensor& weight) {
  return run(kLerp, x, {x, end, weight}, {});
}

const Tensor& fill_(const Tensor& x, const Scalar& value) {
  return run(kFill, x, {x}, with_scalar(value, true));
}

const Tensor& zero_(const Tensor& x) {
  return fill_(x, 0);
}

const Tensor& copy_(const Tensor& x, const Tensor& src) {
  return run(kCopy, x, {x, src}, {});
}

const Tensor& uniform_(const Tensor& x, double low, double high, Generator* generator) {
  return run(kUniform, x, {x}, UniformAttributes{low, high, generator}.to_attributes());
}

const Tensor& normal_(const Tensor& x, double mean, double std, Generator* generator) {
  return run(kNormal, x, {x}, NormalAttributes{mean, std, generator}.to_attributes());
}

std::span<const OpEntry> inplace_entries() {
  static constexpr OpEntry kEntries[] = {kAddInplace, kMulInplace, kAddcmul, kAddcdiv, kLerp,
                                         kFill,       kCopy,       kUniform, kNormal};
  return kEntries;
}

}  // namespace grove::ops
