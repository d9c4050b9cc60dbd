// Softmax family: argument checks, output shapes and the user functions. Kernels are in
// ops/cpu/softmax.cpp.
//
// Attributes: softmax and log_softmax keep the dim in ints[0]; cross_entropy and nll_loss keep
// ignore_index in ints[0].
//
// Note [Cross-entropy saves the log-sum-exp]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The cross_entropy op has two outputs: the mean loss (0-d), which the user function returns,
// and lse (N), the log-sum-exp of each row of logits, which it drops. The derivative needs
// exactly that: with n the number of rows whose target is not ignored,
//   d loss / d logits[i, c] = (exp(logits[i, c] - lse[i]) - [c == targets[i]]) / n
// for those rows and 0 for ignored ones, so autograd can form the gradient from the saved lse
// in one pass without recomputing the row maxima and sums. Autograd sees both outputs through
// the op observer (Note [Op observers] in dispatch.h). lse is computed for every row, ignored
// or not.
#include "ops/softmax.h"

#include "ops/cpu/softmax.h"
#include "ops/dispatch.h"

namespace grove::ops {
namespace {

void check_floating(const OpCall& call, const Tensor& x) {
  GROVE_OP_CHECK(call, is_floating_point(x.dtype()), "expected a floating-point input, but got ",
                 x.dtype(), "; convert it with to(float32)");
}

void infer_softmax(const OpCall& call, OutputSpecs& outputs) {
  const Tensor& x = call.input(0);
  check_floating(call, x);
  const std::int64_t dim = call.attributes.ints[0];
  const std::int64_t ndim = x.dim();
  const std::int64_t low = ndim == 0 ? -1 : -ndim;
  const std::int64_t high = ndim == 0 ? 0 : ndim - 1;
  GROVE_OP_CHECK(call, dim >= low && dim <= high, "dimension ", dim, " is out of range for a ",
                 ndim, "-d input (expected a value in [", low, ", ", high, "])");
  outputs.add(x.sizes(), x.dtype());
}

// cross_entropy and nll_loss: (N, C) floating-point scores and (N) int64 targets.
void infer_loss(const OpCall& call, OutputSpecs& outputs) {
  const Tensor& scores = call.input(0);
  const Tensor& targets = call.input(1);
  const char* what = call.kind == OpKind::CrossEntropy ? "logits" : "log-probabilities";
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
  outputs.add({}, scores.dtype());
  // See Note [Cross-entropy saves the log-sum-exp].
  if (call.kind == OpKind::CrossEntropy) outputs.add({scores.sizes()[0]}, scores.dtype());
}

#define GROVE_ENTRY(kind, infer, kernel) \
  constexpr OpEntry k##kind{OpKind::kind, infer, cpu::kernel, nullptr};
GROVE_ENTRY(Softmax, infer_softmax, softmax)          // ints[0]: dim
GROVE_ENTRY(LogSoftmax, infer_softmax, softmax)       // ints[0]: dim
GROVE_ENTRY(CrossEntropy, infer_loss, cross_entropy)  // ints[0]: ignore_index; outputs loss, lse
GROVE_ENTRY(NllLoss, infer_loss, nll_loss)            // ints[0]: ignore_index
#undef GROVE_ENTRY

OpAttributes with_int(std::int64_t value) {
  OpAttributes attributes;
  attributes.ints = {value};
  return attributes;
}

}  // namespace

Tensor softmax(const Tensor& x, std::int64_t dim) {
  return dispatch(kSoftmax, {x}, with_int(dim))[0];
}

Tensor log_softmax(const Tensor& x, std::int64_t dim) {
  return dispatch(kLogSoftmax, {x}, with_int(dim))[0];
}

Tensor cross_entropy(const Tensor& logits, const Tensor& targets, std::int64_t ignore_index) {
  return dispatch(kCrossEntropy, {logits, targets}, with_int(ignore_index))[0];
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& targets, std::int64_t ignore_index) {
  return dispatch(kNllLoss, {log_probs, targets}, with_int(ignore_index))[0];
}

}  // namespace grove::ops
