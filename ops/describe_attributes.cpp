// describe_attributes(): the attributes of a call of any op, printed by its kind (see
// ops/attributes.h). The switch lists every OpKind, so the compiler points at a new op that has
// no printer yet (-Wswitch).
#include <sstream>

#include "core/error.h"
#include "ops/attributes.h"
#include "ops/collective.h"

namespace grove::ops {
namespace {

std::string scalar_text(const Scalar& scalar) {
  std::ostringstream out;
  out << scalar;
  return out.str();
}

}  // namespace

std::string describe_attributes(OpKind kind, const OpAttributes& a) {
  switch (kind) {
    // A binary op's right operand may be a scalar.
    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::Mul:
    case OpKind::Div:
    case OpKind::Maximum:
    case OpKind::Minimum:
    case OpKind::Eq:
    case OpKind::Ne:
    case OpKind::Lt:
    case OpKind::Le:
    case OpKind::Gt:
    case OpKind::Ge:
      return a.has_scalar ? "scalar=" + scalar_text(a.scalar) : "";
    case OpKind::MaskedFill:
      return "value=" + scalar_text(a.scalar);
    case OpKind::Clamp:
      return ClampAttributes::from(a).describe();
    case OpKind::Pow:
      return PowAttributes::from(a).describe();
    case OpKind::Gelu:
    case OpKind::GeluBackward:
      return GeluAttributes::from(a).describe();
    case OpKind::Where:
    case OpKind::Neg:
    case OpKind::Exp:
    case OpKind::Log:
    case OpKind::Sqrt:
    case OpKind::Rsqrt:
    case OpKind::Abs:
    case OpKind::Tanh:
    case OpKind::Sigmoid:
    case OpKind::Relu:
    case OpKind::ReluBackward:
    case OpKind::Copy:
    case OpKind::Matmul:
    case OpKind::Linear:
    case OpKind::Bmm:
    case OpKind::Embedding:
      return "";
    // In-place updates: the scalar is a named field already.
    case OpKind::AddInplace:
      return "alpha=" + scalar_text(a.scalar);
    case OpKind::MulInplace:
      return a.has_scalar ? "scalar=" + scalar_text(a.scalar) : "";
    case OpKind::Addcmul:
    case OpKind::Addcdiv:
      return "value=" + scalar_text(a.scalar);
    case OpKind::Lerp:
      return a.has_scalar ? "weight=" + scalar_text(a.scalar) : "";
    case OpKind::Fill:
      return "value=" + scalar_text(a.scalar);
    case OpKind::Uniform:
      return UniformAttributes::from(a).describe();
    case OpKind::Normal:
      return NormalAttributes::from(a).describe();
    case OpKind::SgdStep:
      return SgdAttributes::from(a).describe();
    case OpKind::AdamwStep:
      return AdamwAttributes::from(a).describe();
    case OpKind::Sum:
    case OpKind::Mean:
    case OpKind::Max:
    case OpKind::Argmax:
      return ReduceAttributes::from(a).describe(/*with_correction=*/false);
    case OpKind::Var:
      return ReduceAttributes::from(a).describe(/*with_correction=*/true);
    case OpKind::Softmax:
    case OpKind::LogSoftmax:
      return SoftmaxAttributes::from(a).describe();
    case OpKind::CrossEntropy:
    case OpKind::NllLoss:
    case OpKind::CrossEntropyBackward:
    case OpKind::NllLossBackward:
      return LossAttributes::from(a).describe();
    case OpKind::Attention:
    case OpKind::AttentionBackward:
      return AttentionAttributes::from(a).describe();
    case OpKind::LayerNorm:
      return LayerNormAttributes::from(a).describe(/*with_eps=*/true);
    case OpKind::LayerNormBackward:
      return LayerNormAttributes::from(a).describe(/*with_eps=*/false);
    case OpKind::EmbeddingBackward:
      return EmbeddingBackwardAttributes::from(a).describe();
    case OpKind::Conv2d:
      return Conv2dAttributes::from(a).describe();
    case OpKind::Conv2dBackwardInput:
      return Conv2dAttributes::from(a).describe("input_sizes");
    case OpKind::Conv2dBackwardWeight:
      return Conv2dAttributes::from(a).describe("weight_sizes");
    case OpKind::MaxPool2d:
    case OpKind::AvgPool2d:
    case OpKind::AvgPool2dBackward:
      return Pool2dAttributes::from(a).describe();
    case OpKind::MaxPool2dBackward:
      return MaxPool2dBackwardAttributes::from(a).describe();
    case OpKind::Cat:
      return CatAttributes::from(a).describe();
    case OpKind::Tril:
    case OpKind::Triu:
      return TriangleAttributes::from(a).describe();
    case OpKind::OneHot:
      return OneHotAttributes::from(a).describe();
    case OpKind::Rand:
    case OpKind::Randn:
      return FactoryAttributes::from(a).describe();
    case OpKind::Randint:
      return RandintAttributes::from(a).describe();
    case OpKind::Dropout:
      return DropoutAttributes::from(a).describe();
    // Collectives (ops/collective.cpp): ints = {group, reduce op or root}.
    case OpKind::AllReduce:
    case OpKind::Broadcast:
    case OpKind::AllGather: {
      if (a.ints.size() != 2) return "";
      std::string text = "group=" + std::to_string(a.ints[0]);
      if (kind == OpKind::AllReduce) {
        text += ", op=" + std::string(reduce_op_name(static_cast<ReduceOp>(a.ints[1])));
      } else if (kind == OpKind::Broadcast) {
        text += ", root=" + std::to_string(a.ints[1]);
      }
      return text;
    }
    case OpKind::Count:
      break;
  }
  GROVE_INTERNAL_ASSERT(false, "describe_attributes: op kind number ", static_cast<int>(kind),
                        " has no printer");
  return "";
}

}  // namespace grove::ops
