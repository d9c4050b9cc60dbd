// Elementwise ops: argument checks, output shapes and the user functions. Kernels are in
// ops/cpu/elementwise.cpp (one kernel per shape of op: binary, where, masked_fill, unary).
#include "ops/elementwise.h"

#include <cmath>

#include "ops/attributes.h"
#include "ops/broadcast.h"
#include "ops/cpu/elementwise.h"
#include "ops/cuda/elementwise.h"
#include "ops/dispatch.h"
#include "ops/op_table.h"

namespace grove::ops {
namespace {

bool is_arithmetic(DType dtype) {
  return dtype != DType::Bool;
}

// A scalar operand must fit the tensor's dtype without losing its meaning.
void check_scalar(const OpCall& call, DType dtype) {
  const Scalar& scalar = call.attributes.scalar;
  GROVE_OP_CHECK(call, is_floating_point(dtype) || !scalar.is_floating_point(),
                 "a floating-point scalar (", scalar, ") cannot be combined with a ", dtype,
                 " tensor without truncating it; convert the tensor with to(float32) first");
  GROVE_OP_CHECK(call, scalar.fits(dtype), "the scalar ", scalar, " does not fit a ", dtype,
                 " tensor; convert the tensor to a wider dtype first");
}

void check_same_dtype(const OpCall& call, const Tensor& a, const Tensor& b) {
  GROVE_OP_CHECK(call, a.dtype() == b.dtype(), "expected operands of one dtype, but got ",
                 a.dtype(), " and ", b.dtype(), "; convert one with to(dtype)");
}

// Output shape of a binary op: broadcast of the operands (or the tensor's, with a scalar).
DimVector binary_shape(const OpCall& call) {
  const Tensor& a = call.input(0);
  if (call.attributes.has_scalar) {
    check_scalar(call, a.dtype());
    return DimVector(a.sizes());
  }
  check_same_dtype(call, a, call.input(1));
  return broadcast_shapes(call, a.sizes(), call.input(1).sizes());
}

void infer_arithmetic(const OpCall& call, OutputSpecs& outputs) {
  const DType dtype = call.input(0).dtype();
  DimVector shape = binary_shape(call);
  GROVE_OP_CHECK(call, is_arithmetic(dtype), "arithmetic on ", dtype, " tensors is not supported");
  if (call.kind == OpKind::Div) {
    GROVE_OP_CHECK(call, is_floating_point(dtype), "expected floating-point operands, but got ",
                   dtype, " (integer division is not defined here; convert with to(float32))");
  }
  outputs.add(shape, dtype);
}

void infer_comparison(const OpCall& call, OutputSpecs& outputs) {
  outputs.add(binary_shape(call), DType::Bool);
}

void infer_where(const OpCall& call, OutputSpecs& outputs) {
  const Tensor& condition = call.input(0);
  GROVE_OP_CHECK(call, condition.dtype() == DType::Bool, "expected a bool condition, but got ",
                 condition.dtype(), "; make one with a comparison such as gt(x, 0)");
  check_same_dtype(call, call.input(1), call.input(2));
  DimVector shape = broadcast_shapes(call, call.input(1).sizes(), call.input(2).sizes());
  outputs.add(broadcast_shapes(call, condition.sizes(), shape), call.input(1).dtype());
}

void infer_masked_fill(const OpCall& call, OutputSpecs& outputs) {
  const Tensor& x = call.input(0);
  const Tensor& mask = call.input(1);
  GROVE_OP_CHECK(call, mask.dtype() == DType::Bool, "expected a bool mask, but got ", mask.dtype());
  check_scalar(call, x.dtype());
  GROVE_OP_CHECK(call, broadcast_shapes(call, x.sizes(), mask.sizes()) == x.sizes(), "the mask ",
                 mask.sizes(), " must broadcast to the input's shape ", x.sizes());
  outputs.add(x.sizes(), x.dtype());
}

void infer_clamp(const OpCall& call, OutputSpecs& outputs) {
  const Tensor& x = call.input(0);
  const auto [low, high] = ClampAttributes::from(call.attributes);
  GROVE_OP_CHECK(call, is_arithmetic(x.dtype()), "expected a numeric tensor, but got ", x.dtype());
  GROVE_OP_CHECK(call, !(low > high), "the lower bound ", low, " is above the upper bound ", high);
  GROVE_OP_CHECK(call, !std::isnan(low) && !std::isnan(high), "bounds must not be NaN");
  if (!is_floating_point(x.dtype())) {
    for (double bound : {low, high}) {
      GROVE_OP_CHECK(
          call, std::isinf(bound) || (bound == std::floor(bound) && Scalar(bound).fits(x.dtype())),
          "bound ", bound, " is not an integer that fits a ", x.dtype(),
          " tensor (use an integer bound, or +/-infinity for none)");
    }
  }
  outputs.add(x.sizes(), x.dtype());
}

void infer_unary_floating(const OpCall& call, OutputSpecs& outputs) {
  const Tensor& x = call.input(0);
  GROVE_OP_CHECK(call, is_floating_point(x.dtype()), "expected a floating-point tensor, but got ",
                 x.dtype(), "; convert it with to(float32)");
  outputs.add(x.sizes(), x.dtype());
}

void infer_unary_numeric(const OpCall& call, OutputSpecs& outputs) {
  const Tensor& x = call.input(0);
  GROVE_OP_CHECK(call, is_arithmetic(x.dtype()), "expected a numeric tensor, but got ", x.dtype());
  outputs.add(x.sizes(), x.dtype());
}

// gelu_backward, relu_backward: grad and x (or y) of one shape and one floating dtype.
void infer_unary_backward(const OpCall& call, OutputSpecs& outputs) {
  const Tensor& grad = call.input(0);
  const Tensor& x = call.input(1);
  GROVE_OP_CHECK(call, grad.sizes() == x.sizes(), "expected grad of the input's shape ", x.sizes(),
                 ", but got ", grad.sizes(), " (a backward op does not broadcast)");
  GROVE_OP_CHECK(call, is_floating_point(x.dtype()), "expected a floating-point input, but got ",
                 x.dtype());
  GROVE_OP_CHECK(call, grad.dtype() == x.dtype(), "expected grad of the input's dtype ", x.dtype(),
                 ", but got ", grad.dtype());
  outputs.add(x.sizes(), x.dtype());
}

// The inputs each shape of op takes (OpEntry::inputs).
constexpr InputSpec kBinaryInputs[] = {{"a", InputDTypes::Numeric}, {"b", InputDTypes::Numeric}};
constexpr InputSpec kWhereInputs[] = {
    {"condition", InputDTypes::Mask}, {"a", InputDTypes::Numeric}, {"b", InputDTypes::Numeric}};
constexpr InputSpec kMaskedFillInputs[] = {{"x", InputDTypes::Numeric},
                                           {"mask", InputDTypes::Mask}};
constexpr InputSpec kNumericInput[] = {{"x", InputDTypes::Numeric}};
constexpr InputSpec kFloatingInput[] = {{"x", InputDTypes::Floating}};
constexpr InputSpec kGeluBackwardInputs[] = {{"grad"}, {"x"}};
constexpr InputSpec kReluBackwardInputs[] = {{"grad"}, {"y"}};

std::string describe_masked_fill(const OpAttributes& attributes) {
  return describe_scalar("value", attributes);
}

// A binary op: its right operand a tensor or the scalar attribute.
#define GROVE_BINARY(op, infer_fn)                             \
  constexpr OpEntry k##op{.kind = OpKind::op,                  \
                          .inputs = kBinaryInputs,             \
                          .infer = infer_fn,                   \
                          .cpu = cpu::binary,                  \
                          .cuda = GROVE_CUDA_KERNEL(binary),   \
                          .describe = describe_scalar_operand, \
                          .input_count = binary_input_count,   \
                          .cuda_takes_reduced = true};
#define GROVE_UNARY(op, inputs_, infer_fn, kernel_fn, describe_) \
  constexpr OpEntry k##op{.kind = OpKind::op,                    \
                          .inputs = inputs_,                     \
                          .infer = infer_fn,                     \
                          .cpu = cpu::kernel_fn,                 \
                          .cuda = GROVE_CUDA_KERNEL(kernel_fn),  \
                          .describe = describe_,                 \
                          .cuda_takes_reduced = true};
GROVE_BINARY(Add, infer_arithmetic)
GROVE_BINARY(Sub, infer_arithmetic)
GROVE_BINARY(Mul, infer_arithmetic)
GROVE_BINARY(Div, infer_arithmetic)
GROVE_BINARY(Maximum, infer_arithmetic)
GROVE_BINARY(Minimum, infer_arithmetic)
GROVE_BINARY(Eq, infer_comparison)
GROVE_BINARY(Ne, infer_comparison)
GROVE_BINARY(Lt, infer_comparison)
GROVE_BINARY(Le, infer_comparison)
GROVE_BINARY(Gt, infer_comparison)
GROVE_BINARY(Ge, infer_comparison)
GROVE_UNARY(Where, kWhereInputs, infer_where, where, nullptr)
GROVE_UNARY(MaskedFill, kMaskedFillInputs, infer_masked_fill, masked_fill, describe_masked_fill)
GROVE_UNARY(Clamp, kNumericInput, infer_clamp, unary, describe_as<ClampAttributes>)
GROVE_UNARY(Neg, kNumericInput, infer_unary_numeric, unary, nullptr)
GROVE_UNARY(Exp, kFloatingInput, infer_unary_floating, unary, nullptr)
GROVE_UNARY(Log, kFloatingInput, infer_unary_floating, unary, nullptr)
GROVE_UNARY(Sqrt, kFloatingInput, infer_unary_floating, unary, nullptr)
GROVE_UNARY(Rsqrt, kFloatingInput, infer_unary_floating, unary, nullptr)
GROVE_UNARY(Pow, kFloatingInput, infer_unary_floating, unary, describe_as<PowAttributes>)
GROVE_UNARY(Abs, kNumericInput, infer_unary_numeric, unary, nullptr)
GROVE_UNARY(Tanh, kFloatingInput, infer_unary_floating, unary, nullptr)
GROVE_UNARY(Sigmoid, kFloatingInput, infer_unary_floating, unary, nullptr)
GROVE_UNARY(Relu, kNumericInput, infer_unary_numeric, unary, nullptr)
GROVE_UNARY(Gelu, kFloatingInput, infer_unary_floating, unary, describe_as<GeluAttributes>)
GROVE_UNARY(GeluBackward, kGeluBackwardInputs, infer_unary_backward, gelu_backward,
            describe_as<GeluAttributes>)
GROVE_UNARY(ReluBackward, kReluBackwardInputs, infer_unary_backward, relu_backward, nullptr)
#undef GROVE_UNARY
#undef GROVE_BINARY

Tensor binary(const OpEntry& entry, const Tensor& a, const Tensor& b) {
  return dispatch(entry, {a, b})[0];
}

Tensor binary(const OpEntry& entry, const Tensor& a, const Scalar& b) {
  OpAttributes attributes;
  attributes.scalar = b;
  attributes.has_scalar = true;
  return dispatch(entry, {a}, attributes)[0];
}

// Unary ops without attributes, and those with (clamp, pow, gelu: ops/attributes.h).
Tensor unary(const OpEntry& entry, const Tensor& x, const OpAttributes& attributes = {}) {
  return dispatch(entry, {x}, attributes)[0];
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  return binary(kAdd, a, b);
}
Tensor add(const Tensor& a, const Scalar& b) {
  return binary(kAdd, a, b);
}
Tensor sub(const Tensor& a, const Tensor& b) {
  return binary(kSub, a, b);
}
Tensor sub(const Tensor& a, const Scalar& b) {
  return binary(kSub, a, b);
}
Tensor mul(const Tensor& a, const Tensor& b) {
  return binary(kMul, a, b);
}
Tensor mul(const Tensor& a, const Scalar& b) {
  return binary(kMul, a, b);
}
Tensor div(const Tensor& a, const Tensor& b) {
  return binary(kDiv, a, b);
}
Tensor div(const Tensor& a, const Scalar& b) {
  return binary(kDiv, a, b);
}
Tensor maximum(const Tensor& a, const Tensor& b) {
  return binary(kMaximum, a, b);
}
Tensor minimum(const Tensor& a, const Tensor& b) {
  return binary(kMinimum, a, b);
}

Tensor eq(const Tensor& a, const Tensor& b) {
  return binary(kEq, a, b);
}
Tensor eq(const Tensor& a, const Scalar& b) {
  return binary(kEq, a, b);
}
Tensor ne(const Tensor& a, const Tensor& b) {
  return binary(kNe, a, b);
}
Tensor ne(const Tensor& a, const Scalar& b) {
  return binary(kNe, a, b);
}
Tensor lt(const Tensor& a, const Tensor& b) {
  return binary(kLt, a, b);
}
Tensor lt(const Tensor& a, const Scalar& b) {
  return binary(kLt, a, b);
}
Tensor le(const Tensor& a, const Tensor& b) {
  return binary(kLe, a, b);
}
Tensor le(const Tensor& a, const Scalar& b) {
  return binary(kLe, a, b);
}
Tensor gt(const Tensor& a, const Tensor& b) {
  return binary(kGt, a, b);
}
Tensor gt(const Tensor& a, const Scalar& b) {
  return binary(kGt, a, b);
}
Tensor ge(const Tensor& a, const Tensor& b) {
  return binary(kGe, a, b);
}
Tensor ge(const Tensor& a, const Scalar& b) {
  return binary(kGe, a, b);
}

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  return dispatch(kWhere, {condition, a, b})[0];
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value) {
  OpAttributes attributes;
  attributes.scalar = value;
  return dispatch(kMaskedFill, {x, mask}, attributes)[0];
}

Tensor clamp(const Tensor& x, double low, double high) {
  return unary(kClamp, x, ClampAttributes{low, high}.to_attributes());
}

Tensor neg(const Tensor& x) {
  return unary(kNeg, x);
}
Tensor exp(const Tensor& x) {
  return unary(kExp, x);
}
Tensor log(const Tensor& x) {
  return unary(kLog, x);
}
Tensor sqrt(const Tensor& x) {
  return unary(kSqrt, x);
}
Tensor rsqrt(const Tensor& x) {
  return unary(kRsqrt, x);
}
Tensor pow(const Tensor& x, double exponent) {
  return unary(kPow, x, PowAttributes{exponent}.to_attributes());
}
Tensor abs(const Tensor& x) {
  return unary(kAbs, x);
}
Tensor tanh(const Tensor& x) {
  return unary(kTanh, x);
}
Tensor sigmoid(const Tensor& x) {
  return unary(kSigmoid, x);
}
Tensor relu(const Tensor& x) {
  return unary(kRelu, x);
}
Tensor gelu(const Tensor& x, bool approximate) {
  return unary(kGelu, x, GeluAttributes{approximate}.to_attributes());
}

// Inputs: grad, x.
Tensor gelu_backward(const Tensor& grad, const Tensor& x, bool approximate) {
  return dispatch(kGeluBackward, {grad, x}, GeluAttributes{approximate}.to_attributes())[0];
}

// Inputs: grad, y.
Tensor relu_backward(const Tensor& grad, const Tensor& y) {
  return dispatch(kReluBackward, {grad, y})[0];
}

std::span<const OpEntry> elementwise_entries() {
  static constexpr OpEntry kEntries[] = {
      kAdd,   kSub,  kMul,     kDiv,  kMaximum, kMinimum,      kEq,
      kNe,    kLt,   kLe,      kGt,   kGe,      kWhere,        kMaskedFill,
      kClamp, kNeg,  kExp,     kLog,  kSqrt,    kRsqrt,        kPow,
      kAbs,   kTanh, kSigmoid, kRelu, kGelu,    kGeluBackward, kReluBackward};
  return kEntries;
}

}  // namespace grove::ops
