// Attention family: argument checks, output shapes and the user functions (ops/attention.h).
// Kernels: ops/cpu/attention.cpp and ops/cuda/attention.cu.
#include "ops/attention.h"

#include <cmath>
#include <utility>

#include "ops/attributes.h"
#include "ops/cpu/attention.h"
#include "ops/cuda/attention.h"
#include "ops/dispatch.h"
#include "ops/op_table.h"

namespace grove::ops {
namespace {

// q, k, v (and the backward's grad and out): 4-d, one shape, one floating dtype.
void check_heads(const OpCall& call, std::size_t first) {
  const Tensor& q = call.input(first);
  GROVE_OP_CHECK(call, q.dim() == 4, "expected q, k and v of shape (B, T, H, D), but q has ",
                 q.dim(), " dims ", q.sizes(),
                 "; view a (B, T, C) tensor as (B, T, heads, C / heads)");
  GROVE_OP_CHECK(call, is_floating_point(q.dtype()), "expected float32 or float64, but got ",
                 q.dtype());
  const char* names[] = {"q", "k", "v"};
  for (std::size_t i = 1; i < 3; ++i) {
    const Tensor& x = call.input(first + i);
    GROVE_OP_CHECK(call, x.sizes() == q.sizes(), "expected ", names[i], " of q's shape ", q.sizes(),
                   ", but got ", x.sizes(),
                   " (self-attention: queries, keys and values of one sequence)");
    GROVE_OP_CHECK(call, x.dtype() == q.dtype(), "expected ", names[i], " of q's dtype ", q.dtype(),
                   ", but got ", x.dtype());
  }
  const AttentionAttributes attributes = AttentionAttributes::from(call.attributes);
  GROVE_OP_CHECK(call, std::isfinite(attributes.scale), "expected a finite scale, but got ",
                 attributes.scale);
  if (q.device().is_cuda()) {
    GROVE_OP_CHECK(call, q.size(3) <= kCudaMaxHeadWidth, "on CUDA the head width D is at most ",
                   kCudaMaxHeadWidth, ", but got ", q.size(3),
                   "; use more heads of fewer channels each");
  }
}

// Inputs q, k, v -> out (B, T, H, D), lse (B, H, T).
void infer_attention(const OpCall& call, OutputSpecs& outputs) {
  check_heads(call, 0);
  const Tensor& q = call.input(0);
  outputs.add(q.sizes(), q.dtype());
  outputs.add({q.size(0), q.size(2), q.size(1)}, compute_dtype(q.dtype()));
}

// Inputs grad, q, k, v, out, lse -> grad_q, grad_k, grad_v (each q's shape).
void infer_attention_backward(const OpCall& call, OutputSpecs& outputs) {
  check_heads(call, 1);
  const Tensor& q = call.input(1);
  const std::pair<std::size_t, const char*> like_q[] = {{0, "grad"}, {4, "out"}};
  for (const auto& [index, name] : like_q) {
    const Tensor& x = call.input(index);
    GROVE_OP_CHECK(call, x.sizes() == q.sizes() && x.dtype() == q.dtype(), "expected ", name,
                   " of q's shape and dtype ", q.dtype(), q.sizes(), ", but got ", x.dtype(),
                   x.sizes());
  }
  const Tensor& lse = call.input(5);
  const DimVector lse_sizes{q.size(0), q.size(2), q.size(1)};
  GROVE_OP_CHECK(call,
                 lse.sizes() == IntArrayRef(lse_sizes) && lse.dtype() == compute_dtype(q.dtype()),
                 "expected lse of shape (B, H, T) = ", IntArrayRef(lse_sizes), " and dtype ",
                 compute_dtype(q.dtype()), " (attention_with_lse's second output), but got ",
                 lse.dtype(), lse.sizes());
  for (int i = 0; i < 3; ++i) outputs.add(q.sizes(), q.dtype());
}

constexpr InputSpec kAttentionInputs[] = {{"q"}, {"k"}, {"v"}};
constexpr InputSpec kAttentionBackwardInputs[] = {
    {"grad"}, {"q"}, {"k"}, {"v"}, {"out"}, {"lse", InputDTypes::Statistics}};
constexpr OpEntry kAttention{.kind = OpKind::Attention,
                             .inputs = kAttentionInputs,
                             .infer = infer_attention,
                             .cpu = cpu::attention,
                             .cuda = GROVE_CUDA_KERNEL(attention),
                             .describe = describe_as<AttentionAttributes>,
                             .cuda_takes_reduced = true};
constexpr OpEntry kAttentionBackward{.kind = OpKind::AttentionBackward,
                                     .inputs = kAttentionBackwardInputs,
                                     .infer = infer_attention_backward,
                                     .cpu = cpu::attention_backward,
                                     .cuda = GROVE_CUDA_KERNEL(attention_backward),
                                     .describe = describe_as<AttentionAttributes>,
                                     .cuda_takes_reduced = true};

}  // namespace

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale) {
  return attention_with_lse(q, k, v, causal, scale).output;
}

AttentionResult attention_with_lse(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                                   double scale) {
  const OpOutputs out =
      dispatch(kAttention, {q, k, v}, AttentionAttributes{causal, scale}.to_attributes());
  return {out[0], out[1]};
}

AttentionGrads attention_backward(const Tensor& grad, const Tensor& q, const Tensor& k,
                                  const Tensor& v, const Tensor& out, const Tensor& lse,
                                  bool causal, double scale) {
  const OpOutputs grads = dispatch(kAttentionBackward, {grad, q, k, v, out, lse},
                                   AttentionAttributes{causal, scale}.to_attributes());
  return {grads[0], grads[1], grads[2]};
}

std::span<const OpEntry> attention_entries() {
  static constexpr OpEntry kEntries[] = {kAttention, kAttentionBackward};
  return kEntries;
}

}  // namespace grove::ops
