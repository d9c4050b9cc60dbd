// Linear algebra ops: argument checks, output shapes and the user functions. Kernels are in
// ops/cpu/linalg.cpp and ops/cuda/linalg.cpp (matmul and bmm share one kernel; linear has its
// own, for the bias and the weight read transposed).
#include "ops/linalg.h"

#include "ops/broadcast.h"
#include "ops/cpu/linalg.h"
#include "ops/cuda/linalg.h"
#include "ops/dispatch.h"
#include "ops/op_table.h"

namespace grove::ops {
namespace {

// Both operands float32, or both float64.
void check_float_operands(const OpCall& call, const Tensor& a, const Tensor& b) {
  GROVE_OP_CHECK(call, a.dtype() == b.dtype(), "expected operands of one dtype, but got ",
                 a.dtype(), " and ", b.dtype(), "; convert one with to(dtype)");
  GROVE_OP_CHECK(call, is_floating_point(a.dtype()),
                 "expected float32 or float64 operands, but got ", a.dtype(),
                 "; convert with to(float32)");
}

// The leading (batch) dims of a tensor read as a stack of matrices; none for 1-d and 2-d.
IntArrayRef batch_dims(const Tensor& tensor) {
  const IntArrayRef sizes = tensor.sizes();
  return tensor.dim() <= 2 ? IntArrayRef() : IntArrayRef(sizes.data(), sizes.size() - 2);
}

// a: (K) or (..., M, K); b: (K) or (..., K, N). See matmul() in linalg.h for the result.
void infer_matmul(const OpCall& call, OutputSpecs& outputs) {
  const Tensor& a = call.input(0);
  const Tensor& b = call.input(1);
  GROVE_OP_CHECK(call, a.dim() >= 1 && b.dim() >= 1,
                 "expected operands with at least 1 dim, but got ", a.dim(), "-d and ", b.dim(),
                 "-d (multiply a 0-d tensor with mul())");
  check_float_operands(call, a, b);
  const std::int64_t a_inner = a.size(-1);
  const std::int64_t b_inner = b.dim() == 1 ? b.size(0) : b.size(-2);
  GROVE_OP_CHECK(call, a_inner == b_inner, "the inner dimensions do not match: a ", a.sizes(),
                 " has ", a_inner, " columns but b ", b.sizes(), " has ", b_inner, " rows");
  DimVector sizes = broadcast_shapes(call, batch_dims(a), batch_dims(b));
  if (a.dim() >= 2) sizes.push_back(a.size(-2));
  if (b.dim() >= 2) sizes.push_back(b.size(-1));
  outputs.add(sizes, a.dtype());
}

// a: (B, M, K), b: (B, K, N) -> (B, M, N).
void infer_bmm(const OpCall& call, OutputSpecs& outputs) {
  const Tensor& a = call.input(0);
  const Tensor& b = call.input(1);
  GROVE_OP_CHECK(call, a.dim() == 3 && b.dim() == 3, "expected two 3-d operands, but got ", a.dim(),
                 "-d and ", b.dim(), "-d (use matmul() for other ranks)");
  check_float_operands(call, a, b);
  GROVE_OP_CHECK(call, a.size(0) == b.size(0), "expected equal batch sizes, but got ", a.size(0),
                 " and ", b.size(0), " (bmm does not broadcast; use matmul())");
  GROVE_OP_CHECK(call, a.size(2) == b.size(1), "the inner dimensions do not match: a ", a.sizes(),
                 " has ", a.size(2), " columns but b ", b.sizes(), " has ", b.size(1), " rows");
  outputs.add({a.size(0), a.size(1), b.size(2)}, a.dtype());
}

// x: (..., in), weight: (out, in), bias (optional third input): (out) -> (..., out).
void infer_linear(const OpCall& call, OutputSpecs& outputs) {
  const Tensor& x = call.input(0);
  const Tensor& weight = call.input(1);
  GROVE_OP_CHECK(call, x.dim() >= 1, "expected an input with at least 1 dim, but got a 0-d one");
  GROVE_OP_CHECK(call, weight.dim() == 2,
                 "expected a 2-d weight (out_features, in_features), "
                 "but got ",
                 weight.dim(), "-d");
  check_float_operands(call, x, weight);
  GROVE_OP_CHECK(call, x.size(-1) == weight.size(1), "the input's last dim (", x.size(-1),
                 ") does not match the weight's in_features (", weight.size(1), "): input ",
                 x.sizes(), ", weight ", weight.sizes());
  if (call.inputs.size() == 3) {
    const Tensor& bias = call.input(2);
    GROVE_OP_CHECK(call, bias.dim() == 1 && bias.size(0) == weight.size(0),
                   "expected a bias of shape [", weight.size(0), "], but got ", bias.sizes());
    GROVE_OP_CHECK(call, bias.dtype() == x.dtype(), "expected a ", x.dtype(), " bias, but got ",
                   bias.dtype());
  }
  DimVector sizes(x.sizes());
  sizes[sizes.size() - 1] = weight.size(0);
  outputs.add(sizes, x.dtype());
}

// grad: (N, out), x: (N, in) -> grad_weight (out, in) and, with the bias flag, grad_bias (out).
void infer_linear_weight_grad(const OpCall& call, OutputSpecs& outputs) {
  const Tensor& grad = call.input(0);
  const Tensor& x = call.input(1);
  GROVE_OP_CHECK(call, grad.dim() == 2 && x.dim() == 2,
                 "expected a 2-d grad (rows, out_features) and a 2-d input (rows, in_features), "
                 "but got ",
                 grad.dim(), "-d and ", x.dim(), "-d; flatten the leading dims with reshape");
  check_float_operands(call, grad, x);
  GROVE_OP_CHECK(call, grad.size(0) == x.size(0), "expected one row of grad per row of the input, ",
                 "but got ", grad.size(0), " and ", x.size(0), " rows");
  outputs.add({grad.size(1), x.size(1)}, grad.dtype());
  if (call.attributes.flag) outputs.add({grad.size(1)}, grad.dtype());
}

std::string describe_linear_weight_grad(const OpAttributes& attributes) {
  return attributes.flag ? "bias=true" : "bias=false";
}

// matmul, linear, bmm: no attributes; linear_weight_grad: flag = with the bias gradient.
constexpr InputSpec kMatmulInputs[] = {{"a"}, {"b"}};
constexpr InputSpec kLinearWeightGradInputs[] = {{"grad"}, {"x"}};
constexpr InputSpec kLinearInputs[] = {{"x"}, {"weight"}, {"bias", InputDTypes::Floating, true}};
constexpr OpEntry kMatmul{.kind = OpKind::Matmul,
                          .inputs = kMatmulInputs,
                          .infer = infer_matmul,
                          .cpu = cpu::matmul,
                          .cuda = GROVE_CUDA_KERNEL(matmul),
                          .cuda_takes_reduced = true};
constexpr OpEntry kBmm{.kind = OpKind::Bmm,
                       .inputs = kMatmulInputs,
                       .infer = infer_bmm,
                       .cpu = cpu::matmul,
                       .cuda = GROVE_CUDA_KERNEL(matmul),
                       .cuda_takes_reduced = true};
constexpr OpEntry kLinear{.kind = OpKind::Linear,
                          .inputs = kLinearInputs,
                          .infer = infer_linear,
                          .cpu = cpu::linear,
                          .cuda = GROVE_CUDA_KERNEL(linear),
                          .cuda_takes_reduced = true};
constexpr OpEntry kLinearWeightGrad{.kind = OpKind::LinearWeightGrad,
                                    .inputs = kLinearWeightGradInputs,
                                    .infer = infer_linear_weight_grad,
                                    .cpu = cpu::linear_weight_grad,
                                    .cuda = GROVE_CUDA_KERNEL(linear_weight_grad),
                                    .describe = describe_linear_weight_grad,
                                    .cuda_takes_reduced = true};

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  return dispatch(kMatmul, {a, b})[0];
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  return dispatch(kBmm, {a, b})[0];
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (bias.defined()) return dispatch(kLinear, {x, weight, bias})[0];
  return dispatch(kLinear, {x, weight})[0];
}

std::vector<Tensor> linear_weight_grad(const Tensor& grad, const Tensor& x, bool bias) {
  OpAttributes attributes;
  attributes.flag = bias;
  const OpOutputs outputs = dispatch(kLinearWeightGrad, {grad, x}, attributes);
  return std::vector<Tensor>(outputs.span().begin(), outputs.span().end());
}

std::span<const OpEntry> linalg_entries() {
  static constexpr OpEntry kEntries[] = {kMatmul, kLinear, kBmm, kLinearWeightGrad};
  return kEntries;
}

}  // namespace grove::ops
