// How many tensor inputs each op takes (ops/op_table.h: input_count), checked by dispatch()
// before an op's `infer` reads any input. The user functions always pass the right number; this
// guards the op table's other callers (an interpreter replaying a recorded node, a test), for
// which a missing input would otherwise be read past the end of the call's inputs.
//
// Counts follow the input lists written next to each OpEntry in ops/<family>.cpp. Where the
// attributes decide (a binary op with a scalar right operand, sgd_/adamw_ reading lr from a
// tensor, layer_norm with a weight), the count is worked out from them.
#include "ops/attributes.h"
#include "ops/op_table.h"

namespace grove::ops {
namespace {

// sgd_ and adamw_ over several parameters: a count their infer accepts (ops/optim.cpp).
bool valid_param_count(std::int64_t params) {
  return params >= 1 && params <= kMaxOptimParams;
}

}  // namespace

InputCount input_count(OpKind kind, const OpAttributes& attributes) {
  const std::size_t scalar_operand = attributes.has_scalar ? 1 : 0;
  switch (kind) {
    // Binary ops and comparisons: (a, b), or (a) with a scalar b.
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
    case OpKind::MulInplace:
      return InputCount::exactly(2 - scalar_operand);
    case OpKind::Where:
    case OpKind::Addcmul:
    case OpKind::Addcdiv:
    case OpKind::NllLossBackward:
      return InputCount::exactly(3);
    case OpKind::MaskedFill:
    case OpKind::GeluBackward:
    case OpKind::ReluBackward:
    case OpKind::AddInplace:
    case OpKind::Copy:
    case OpKind::Matmul:
    case OpKind::Bmm:
    case OpKind::CrossEntropy:
    case OpKind::NllLoss:
    case OpKind::Embedding:
    case OpKind::EmbeddingBackward:
    case OpKind::Conv2dBackwardInput:
    case OpKind::Conv2dBackwardWeight:
    case OpKind::MaxPool2dBackward:
      return InputCount::exactly(2);
    case OpKind::Clamp:
    case OpKind::Neg:
    case OpKind::Exp:
    case OpKind::Log:
    case OpKind::Sqrt:
    case OpKind::Rsqrt:
    case OpKind::Pow:
    case OpKind::Abs:
    case OpKind::Tanh:
    case OpKind::Sigmoid:
    case OpKind::Relu:
    case OpKind::Gelu:
    case OpKind::Fill:
    case OpKind::Uniform:
    case OpKind::Normal:
    case OpKind::Sum:
    case OpKind::Mean:
    case OpKind::Max:
    case OpKind::Argmax:
    case OpKind::Var:
    case OpKind::Softmax:
    case OpKind::LogSoftmax:
    case OpKind::MaxPool2d:
    case OpKind::AvgPool2d:
    case OpKind::AvgPool2dBackward:
    case OpKind::Tril:
    case OpKind::Triu:
    case OpKind::OneHot:
    case OpKind::Dropout:
    case OpKind::AllReduce:
    case OpKind::Broadcast:
    case OpKind::AllGather:
      return InputCount::exactly(1);
    case OpKind::Lerp:  // (x, end) with a scalar weight, or (x, end, weight)
      return {2, 3};
    case OpKind::SgdStep: {  // (param, grad[, velocity][, lr]), or n of each but lr
      const SgdAttributes a = SgdAttributes::from(attributes);
      const std::size_t lr = a.lr_from_tensor ? 1 : 0;
      if (a.params == 1) return {2 + lr, 3 + lr};
      if (!valid_param_count(a.params)) return {0, InputCount::kAny};  // infer refuses it
      const auto n = static_cast<std::size_t>(a.params);
      return InputCount::exactly(n * (a.momentum != 0 ? 3 : 2) + lr);
    }
    case OpKind::AdamwStep: {  // (param, grad, exp_avg, exp_avg_sq, step[, lr]), n of the four
      const AdamwAttributes a = AdamwAttributes::from(attributes);
      if (!valid_param_count(a.params)) return {0, InputCount::kAny};  // infer refuses it
      return InputCount::exactly(4 * static_cast<std::size_t>(a.params) + 1 +
                                 (a.lr_from_tensor ? 1 : 0));
    }
    case OpKind::Linear:  // (x, weight[, bias])
    case OpKind::Conv2d:  // (input, weight[, bias])
      return {2, 3};
    case OpKind::CrossEntropyBackward:  // (grad, logits, targets, logsumexp)
      return InputCount::exactly(4);
    case OpKind::LayerNorm: {  // (x[, weight][, bias])
      const std::size_t weight = LayerNormAttributes::from(attributes).has_weight ? 1 : 0;
      return {1 + weight, 2 + weight};
    }
    case OpKind::Attention:  // (q, k, v)
      return InputCount::exactly(3);
    case OpKind::AttentionBackward:  // (grad, q, k, v, out, lse)
      return InputCount::exactly(6);
    case OpKind::LayerNormBackward:  // (grad, x, mean, rstd[, weight])
      return InputCount::exactly(LayerNormAttributes::from(attributes).has_weight ? 5 : 4);
    case OpKind::Cat:  // one or more; infer_cat refuses none with its own message
      return {0, InputCount::kAny};
    case OpKind::Rand:
    case OpKind::Randn:
    case OpKind::Randint:
      return InputCount::exactly(0);
    case OpKind::Count:
      break;
  }
  GROVE_CHECK(false, "input_count: ", static_cast<int>(kind),
              " is not an op kind (expected a value below ", static_cast<int>(OpKind::Count), ")");
  return {};
}

std::size_t in_place_writes(OpKind kind, const OpAttributes& attributes) {
  std::int64_t params = 1;
  if (kind == OpKind::SgdStep) params = SgdAttributes::from(attributes).params;
  if (kind == OpKind::AdamwStep) params = AdamwAttributes::from(attributes).params;
  return valid_param_count(params) ? static_cast<std::size_t>(params) : 1;
}

}  // namespace grove::ops
