// Derivative rules of the neural-network ops: softmax and the losses, layer_norm, embedding,
// conv2d and pooling. The heavy ones call the backward ops of their families (ops/*_backward),
// which have their own kernels.
#include "autograd/rules_helpers.h"
#include "ops/attention.h"
#include "ops/attributes.h"
#include "ops/conv.h"
#include "ops/elementwise.h"
#include "ops/embedding.h"
#include "ops/layer_norm.h"
#include "ops/pool.h"
#include "ops/reduce.h"
#include "ops/rms_norm.h"
#include "ops/softmax.h"

namespace grove::autograd {
namespace {

using namespace grove::ops;

// y = softmax(x):  dx = y (g - sum(g y))   (sums along dim)
GROVE_BACKWARD(softmax) {
  const Tensor& y = ctx.output(0);
  const std::int64_t dim = SoftmaxAttributes::from(ctx.attributes).dim;
  const Tensor gy = mul(ctx.grad, y);
  grads[0] = y.dim() == 0 ? mul(gy, 0.0) : sub(gy, mul(y, sum(gy, {dim}, /*keepdim=*/true)));
}

// y = log_softmax(x):  dx = g - exp(y) sum(g)   (sums along dim)
GROVE_BACKWARD(log_softmax) {
  const Tensor& y = ctx.output(0);
  const std::int64_t dim = SoftmaxAttributes::from(ctx.attributes).dim;
  grads[0] = y.dim() == 0 ? mul(ctx.grad, 0.0)
                          : sub(ctx.grad, mul(exp(y), sum(ctx.grad, {dim}, /*keepdim=*/true)));
}

// loss = mean over valid rows of (lse - x[target]):  dx = g (softmax(x) - onehot) / n_valid
GROVE_BACKWARD(cross_entropy) {
  grads[0] = ops::cross_entropy_backward(ctx.grad, ctx.input(0), ctx.input(1), ctx.output(1),
                                         LossAttributes::from(ctx.attributes).ignore_index);
}

// loss = -mean over valid rows of x[target]:  dx = -g onehot / n_valid
GROVE_BACKWARD(nll_loss) {
  grads[0] = ops::nll_loss_backward(ctx.grad, ctx.input(0), ctx.input(1),
                                    LossAttributes::from(ctx.attributes).ignore_index);
}

// y = xhat w + b, xhat = (x - mean) rstd:
//   dw = sum over rows of g xhat, db = sum over rows of g,
//   dx = rstd (g w - mean(g w) - xhat mean(g w xhat))   (means over the normalized dims)
GROVE_BACKWARD(layer_norm) {
  const LayerNormAttributes a = LayerNormAttributes::from(ctx.attributes);
  const bool has_weight = a.has_weight;
  // The weight is saved only when dx is wanted (dweight and dbias do not depend on it).
  const Tensor weight = has_weight && ctx.needs(0) ? ctx.input(1) : Tensor();
  LayerNormGrads result = ops::layer_norm_backward(ctx.grad, ctx.input(0), ctx.output(1),
                                                   ctx.output(2), a.normalized_shape, weight);
  grads[0] = std::move(result.grad_input);
  std::size_t next = 1;
  if (has_weight) grads[next++] = std::move(result.grad_weight);
  if (next < grads.size()) grads[next] = std::move(result.grad_bias);
}

// y = xhat w, xhat = x rrms, rrms = 1 / sqrt(mean(x^2) + eps):
//   dw = sum over rows of g xhat,
//   dx = rrms (g w - xhat mean(g w xhat))   (means over the normalized dims)
GROVE_BACKWARD(rms_norm) {
  const LayerNormAttributes a = LayerNormAttributes::from(ctx.attributes);
  // The weight is saved only when dx is wanted (dweight does not depend on it).
  const Tensor weight = a.has_weight && ctx.needs(0) ? ctx.input(1) : Tensor();
  RmsNormGrads result =
      ops::rms_norm_backward(ctx.grad, ctx.input(0), ctx.output(1), a.normalized_shape, weight);
  grads[0] = std::move(result.grad_input);
  if (a.has_weight) grads[1] = std::move(result.grad_weight);
}

// out = softmax(q k^T scale, masked) v per head (ops/attention.h gives the gradients' formulas:
// ds = p (g v^T - rowsum(g out)), dq = scale ds k, dk = scale ds^T q, dv = p^T g), from the saved
// inputs, out and the log-sum-exp of each row
GROVE_BACKWARD(attention) {
  const AttentionAttributes a = AttentionAttributes::from(ctx.attributes);
  AttentionGrads result =
      ops::attention_backward(ctx.grad, ctx.input(0), ctx.input(1), ctx.input(2), ctx.output(0),
                              ctx.output(1), a.causal, a.scale);
  grads[0] = std::move(result.grad_q);
  grads[1] = std::move(result.grad_k);
  grads[2] = std::move(result.grad_v);
}

// y[i] = weight[indices[i]]:  dweight[r] = sum of g[i] over the i with indices[i] == r
GROVE_BACKWARD(embedding) {
  grads[0] = ops::embedding_backward(ctx.grad, ctx.input(1), ctx.inputs[0].sizes[0]);
}

GROVE_BACKWARD(conv2d) {
  const Conv2dAttributes a = Conv2dAttributes::from(ctx.attributes);
  const IntArrayRef stride(a.stride.data(), 2);
  const IntArrayRef padding(a.padding.data(), 2);
  const IntArrayRef dilation(a.dilation.data(), 2);
  const std::int64_t groups = a.groups;
  if (ctx.needs(0)) {
    grads[0] = conv2d_backward_input(ctx.grad, ctx.input(1), ctx.inputs[0].sizes, stride, padding,
                                     dilation, groups);
  }
  if (ctx.needs(1)) {
    grads[1] = conv2d_backward_weight(ctx.grad, ctx.input(0), ctx.inputs[1].sizes, stride, padding,
                                      dilation, groups);
  }
  if (ctx.needs(2)) grads[2] = sum(ctx.grad, {0, 2, 3});
}

// The gradient of each window goes to the element its index output names (windows that
// overlap add up).
GROVE_BACKWARD(max_pool2d) {
  grads[0] = ops::max_pool2d_backward(ctx.grad, ctx.output(1), ctx.inputs[0].sizes);
}

GROVE_BACKWARD(avg_pool2d) {
  const Pool2dAttributes a = Pool2dAttributes::from(ctx.attributes);
  grads[0] =
      ops::avg_pool2d_backward(ctx.grad, ctx.inputs[0].sizes, IntArrayRef(a.kernel.data(), 2),
                               IntArrayRef(a.stride.data(), 2), IntArrayRef(a.padding.data(), 2));
}

constexpr std::uint8_t kIn0 = 1;
constexpr std::uint8_t kIn1 = 2;
constexpr std::uint8_t kIn01 = 3;
constexpr std::uint8_t kOut0 = 1;
constexpr std::uint8_t kOut1 = 2;
constexpr std::uint8_t kOut12 = 6;
constexpr std::uint8_t kOut01 = 3;
constexpr std::uint8_t kIn012 = 7;
using D = Differentiability;

// clang-format off
constexpr DerivativeRule kRules[] = {
    {OpKind::Softmax, D::Rule, 0, kOut0, false, softmax_backward},
    {OpKind::LogSoftmax, D::Rule, 0, kOut0, false, log_softmax_backward},
    {OpKind::CrossEntropy, D::Rule, kIn01, kOut1, false, cross_entropy_backward},
    {OpKind::NllLoss, D::Rule, kIn01, 0, false, nll_loss_backward},
    {OpKind::LayerNorm, D::Rule, kIn01, kOut12, false, layer_norm_backward, {0, kIn0}},
    {OpKind::RmsNorm, D::Rule, kIn01, kOut1, false, rms_norm_backward, {0, kIn0}},
    {OpKind::Embedding, D::Rule, kIn1, 0, false, embedding_backward},
    {OpKind::Attention, D::Rule, kIn012, kOut01, false, attention_backward},
    {OpKind::Conv2d, D::Rule, kIn01, 0, false, conv2d_backward, {kIn1, kIn0}},
    {OpKind::MaxPool2d, D::Rule, 0, kOut1, false, max_pool2d_backward},
    {OpKind::AvgPool2d, D::Rule, 0, 0, false, avg_pool2d_backward},
    {OpKind::CrossEntropyBackward, D::NoRule}, {OpKind::NllLossBackward, D::NoRule},
    {OpKind::LayerNormBackward, D::NoRule}, {OpKind::RmsNormBackward, D::NoRule},
    {OpKind::EmbeddingBackward, D::NoRule},
    {OpKind::AttentionBackward, D::NoRule},
    {OpKind::Conv2dBackwardInput, D::NoRule}, {OpKind::Conv2dBackwardWeight, D::NoRule},
    {OpKind::MaxPool2dBackward, D::NoRule}, {OpKind::AvgPool2dBackward, D::NoRule},
};
// clang-format on

}  // namespace

std::span<const DerivativeRule> nn_rules() {
  return kRules;
}

}  // namespace grove::autograd
