// Softmax family: argument checks, output shapes and the user functions. Kernels are in
// ops/cpu/softmax.cpp, and the losses and their gradients in ops/cpu/loss.cpp.
//
// Attributes (ops/attributes.h): softmax and log_softmax take SoftmaxAttributes (the dim);
// cross_entropy, nll_loss and their backward ops LossAttributes (ignore_index).
//
// Note [Cross-entropy saves the log-sum-exp]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The cross_entropy op has two outputs: the mean loss (0-d), which the user function returns,
// and lse (N), the log-sum-exp of each row of logits, which it drops. The derivative needs
// exactly that: with n the number of rows whose target is not ignored,
//   d loss / d logits[i, c] = (exp(logits[i, c] - lse[i]) - [c == targets[i]]) / n
// for those rows and 0 for ignored ones, so the gradient (cross_entropy_backward) is formed from
// the saved lse in one pass without recomputing the row maxima and sums. Autograd sees both
// outputs through the op observer (Note [Op observers] in dispatch.h). lse is computed for every
// row, ignored or not. When every row is ignored (n = 0) the loss is NaN and the gradient is 0:
// see cross_entropy_backward in softmax.h.
//
// Note [A loss is in the compute dtype]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// cross_entropy and nll_loss of bfloat16 or float16 scores return a float32 loss (and take a
// float32 grad in their backward ops), as they save a float32 lse: the loss is a mean over many
// rows of sums over many classes, computed in float32 either way, and rounding it to 8 bits of
// mantissa would show three digits of it in a training log. PyTorch returns a 16-bit loss
// unless autocast casts the logits to float32 first, which costs a float32 copy of every logit
// (a GPT-2 step's logits are 8 x 1024 x 50304): here the kernels read the 16-bit logits as they
// are, compute in float32, and round the logits' gradient once, so autocast leaves them alone
// (ops/autocast.cpp) and gets what its cast would have given, without the copies.
#include "ops/softmax.h"

#include "ops/attributes.h"
#include "ops/cpu/softmax.h"
#include "ops/cuda/softmax.h"
#include "ops/dispatch.h"
#include "ops/op_table.h"

namespace grove::ops {
namespace {

void check_floating(const OpCall& call, const Tensor& x) {
  GROVE_OP_CHECK(call, is_floating_point(x.dtype()), "expected a floating-point input, but got ",
                 x.dtype(), "; convert it with to(float32)");
}

void infer_softmax(const OpCall& call, OutputSpecs& outputs) {
  const Tensor& x = call.input(0);
  check_floating(call, x);
  const std::int64_t dim = SoftmaxAttributes::from(call.attributes).dim;
  const std::int64_t ndim = x.dim();
  const std::int64_t low = ndim == 0 ? -1 : -ndim;
  const std::int64_t high = ndim == 0 ? 0 : ndim - 1;
  GROVE_OP_CHECK(call, dim >= low && dim <= high, "dimension ", dim, " is out of range for a ",
                 ndim, "-d input (expected a value in [", low, ", ", high, "])");
  outputs.add(x.sizes(), x.dtype());
}

// (N, C) floating-point scores and (N) int64 targets, of the losses and their gradients.
void check_scores_and_targets(const OpCall& call, const Tensor& scores, const Tensor& targets) {
  const bool logits =
      call.kind == OpKind::CrossEntropy || call.kind == OpKind::CrossEntropyBackward;
  const char* what = logits ? "logits" : "log-probabilities";
  check_floating(call, scores);
  GROVE_OP_CHECK(call, scores.dim() == 2, "expected ", what, " of shape (N, C), but got shape ",
                 scores.sizes(), "; flatten the leading dims with view({-1, C})");
  GROVE_OP_CHECK(call, scores.sizes()[1] > 0, "expected at least one class, but the ", what,
                 " have shape ", scores.sizes());
  GROVE_OP_CHECK(call, targets.dtype() == DType::Int64,
                 "expected int64 class indices as targets, "
                 "but got ",
                 targets.dtype(), "; convert them with to(int64)");
  GROVE_OP_CHECK(call, targets.dim() == 1 && targets.sizes()[0] == scores.sizes()[0],
                 "expected targets of shape [", scores.sizes()[0], "] (one per row of the ", what,
                 " ", scores.sizes(), "), but got ", targets.sizes());
}

// cross_entropy and nll_loss: scores, targets -> the mean loss (and for cross_entropy lse).
void infer_loss(const OpCall& call, OutputSpecs& outputs) {
  const Tensor& scores = call.input(0);
  check_scores_and_targets(call, scores, call.input(1));
  // See Note [A loss is in the compute dtype].
  outputs.add({}, compute_dtype(scores.dtype()));
  // See Note [Cross-entropy saves the log-sum-exp].
  if (call.kind == OpKind::CrossEntropy) {
    outputs.add({scores.sizes()[0]}, compute_dtype(scores.dtype()));  // lse, for the backward
  }
}

// cross_entropy_backward and nll_loss_backward: grad (0-d), scores, targets, and for
// cross_entropy_backward lse (N) -> the scores' gradient (N, C).
void infer_loss_backward(const OpCall& call, OutputSpecs& outputs) {
  const Tensor& grad = call.input(0);
  const Tensor& scores = call.input(1);
  check_scores_and_targets(call, scores, call.input(2));
  GROVE_OP_CHECK(call, grad.dim() == 0 && grad.dtype() == compute_dtype(scores.dtype()),
                 "expected a 0-d grad (of the mean loss) of dtype ", compute_dtype(scores.dtype()),
                 ", but got ", grad.dtype(), grad.sizes());
  if (call.kind == OpKind::CrossEntropyBackward) {
    const Tensor& lse = call.input(3);
    GROVE_OP_CHECK(call,
                   lse.dim() == 1 && lse.sizes()[0] == scores.sizes()[0] &&
                       lse.dtype() == compute_dtype(scores.dtype()),
                   "expected lse of shape [", scores.sizes()[0], "] and dtype ",
                   compute_dtype(scores.dtype()),
                   " (the cross_entropy op's second output), but got ", lse.dtype(), lse.sizes());
  }
  outputs.add(scores.sizes(), scores.dtype());
}

constexpr InputSpec kSoftmaxInputs[] = {{"x"}};
constexpr InputSpec kCrossEntropyInputs[] = {{"logits"}, {"targets", InputDTypes::Index}};
constexpr InputSpec kNllLossInputs[] = {{"log_probs"}, {"targets", InputDTypes::Index}};
// The loss's grad is in the compute dtype, as the loss (Note [A loss is in the compute dtype]).
constexpr InputSpec kCrossEntropyBackwardInputs[] = {{"grad", InputDTypes::Statistics},
                                                     {"logits"},
                                                     {"targets", InputDTypes::Index},
                                                     {"lse", InputDTypes::Statistics}};
constexpr InputSpec kNllLossBackwardInputs[] = {
    {"grad", InputDTypes::Statistics}, {"log_probs"}, {"targets", InputDTypes::Index}};

#define GROVE_ENTRY(op, inputs_, infer_fn, kernel_fn, describe_) \
  constexpr OpEntry k##op{.kind = OpKind::op,                    \
                          .inputs = inputs_,                     \
                          .infer = infer_fn,                     \
                          .cpu = cpu::kernel_fn,                 \
                          .cuda = GROVE_CUDA_KERNEL(kernel_fn),  \
                          .describe = describe_};
GROVE_ENTRY(Softmax, kSoftmaxInputs, infer_softmax, softmax, describe_as<SoftmaxAttributes>)
GROVE_ENTRY(LogSoftmax, kSoftmaxInputs, infer_softmax, softmax, describe_as<SoftmaxAttributes>)
// Outputs loss and lse.
#undef GROVE_ENTRY
// The losses and their gradients: the CUDA kernels read 16-bit scores as they are.
#define GROVE_LOSS_ENTRY(op, inputs_, infer_fn, kernel_fn)         \
  constexpr OpEntry k##op{.kind = OpKind::op,                      \
                          .inputs = inputs_,                       \
                          .infer = infer_fn,                       \
                          .cpu = cpu::kernel_fn,                   \
                          .cuda = GROVE_CUDA_KERNEL(kernel_fn),    \
                          .describe = describe_as<LossAttributes>, \
                          .cuda_takes_reduced = true};
GROVE_LOSS_ENTRY(CrossEntropy, kCrossEntropyInputs, infer_loss, cross_entropy)
GROVE_LOSS_ENTRY(NllLoss, kNllLossInputs, infer_loss, nll_loss)
GROVE_LOSS_ENTRY(CrossEntropyBackward, kCrossEntropyBackwardInputs, infer_loss_backward,
                 cross_entropy_backward)
GROVE_LOSS_ENTRY(NllLossBackward, kNllLossBackwardInputs, infer_loss_backward, nll_loss_backward)
#undef GROVE_LOSS_ENTRY

OpAttributes with_dim(std::int64_t dim) {
  return SoftmaxAttributes{dim}.to_attributes();
}

OpAttributes with_ignore_index(std::int64_t ignore_index) {
  return LossAttributes{ignore_index}.to_attributes();
}

}  // namespace

Tensor softmax(const Tensor& x, std::int64_t dim) {
  return dispatch(kSoftmax, {x}, with_dim(dim))[0];
}

Tensor log_softmax(const Tensor& x, std::int64_t dim) {
  return dispatch(kLogSoftmax, {x}, with_dim(dim))[0];
}

Tensor cross_entropy(const Tensor& logits, const Tensor& targets, std::int64_t ignore_index) {
  return dispatch(kCrossEntropy, {logits, targets}, with_ignore_index(ignore_index))[0];
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& targets, std::int64_t ignore_index) {
  return dispatch(kNllLoss, {log_probs, targets}, with_ignore_index(ignore_index))[0];
}

Tensor cross_entropy_backward(const Tensor& grad, const Tensor& logits, const Tensor& targets,
                              const Tensor& lse, std::int64_t ignore_index) {
  return dispatch(kCrossEntropyBackward, {grad, logits, targets, lse},
                  with_ignore_index(ignore_index))[0];
}

Tensor nll_loss_backward(const Tensor& grad, const Tensor& log_probs, const Tensor& targets,
                         std::int64_t ignore_index) {
  return dispatch(kNllLossBackward, {grad, log_probs, targets}, with_ignore_index(ignore_index))[0];
}

std::span<const OpEntry> softmax_entries() {
  static constexpr OpEntry kEntries[] = {kSoftmax, kLogSoftmax,           kCrossEntropy,
                                         kNllLoss, kCrossEntropyBackward, kNllLossBackward};
  return kEntries;
}

}  // namespace grove::ops
