// Softmax and the losses built on it: softmax, log_softmax, cross_entropy and nll_loss, and the
// losses' gradients.
// All return new contiguous tensors on the input's device; none synchronises the host.
//
// softmax and log_softmax take a floating-point tensor of any shape and normalise along `dim`
// (negative counts from the end). They subtract the row maximum before exponentiating, so
// large logits do not overflow; a row holding NaN gives NaN, and a row that is entirely -inf
// gives NaN (as PyTorch).
//
// cross_entropy(logits, targets) is the mean over rows i with targets[i] != ignore_index of
// -log_softmax(logits)[i, targets[i]], computed in one fused pass per row from the logits
// (log_softmax is never materialised). nll_loss is the same mean over given log-probabilities.
// Shapes: logits / log_probs (N, C) floating point; targets (N) int64 class indices in [0, C)
// or ignore_index. If every target is ignored (or N = 0) the mean has no terms and is NaN.
//
// Targets are checked by the kernel, not on the host, so that no op has to read device memory
// before it launches (which a captured graph forbids). On the CPU, a target outside [0, C)
// throws a grove::Error naming the value and its position when the kernel runs: at the call in
// eager mode, at replay for a captured graph. A CUDA kernel cannot throw: it makes the bad row's
// loss and gradient NaN, so the mean is NaN, and reports the target, so the next
// synchronisation throws grove::DeviceCheckError (Note [Out-of-range targets on the GPU] in
// ops/cuda/loss.cu).
#pragma once

#include "core/tensor.h"

namespace grove::ops {

Tensor softmax(const Tensor& x, std::int64_t dim);
Tensor log_softmax(const Tensor& x, std::int64_t dim);

// logits: (N, C); targets: (N) int64 -> the mean loss, 0-d, in the logits' dtype.
Tensor cross_entropy(const Tensor& logits, const Tensor& targets, std::int64_t ignore_index = -100);
// log_probs: (N, C); targets: (N) int64 -> -mean(log_probs[i, targets[i]]), 0-d.
Tensor nll_loss(const Tensor& log_probs, const Tensor& targets, std::int64_t ignore_index = -100);

// The gradients of the two losses with respect to their scores, for autograd's rules. grad is
// the gradient of the mean loss: a 0-d tensor in the scores' dtype that the kernel reads (never
// the host), so a captured graph replays with whatever grad then holds. With n the number of
// rows whose target is not ignore_index:
//   cross_entropy_backward: (N, C) = grad (softmax(logits) - onehot(target)) / n on those rows,
//     with softmax(logits)[i, c] = exp(logits[i, c] - lse[i]); lse (N) is the second output of
//     the cross_entropy op (Note [Cross-entropy saves the log-sum-exp] in ops/softmax.cpp);
//   nll_loss_backward: (N, C) = -grad / n at (i, targets[i]) on those rows, 0 elsewhere.
// Ignored rows get 0. If every target is ignored (or N = 0), the forward's mean has no terms and
// is NaN whatever the scores are (a constant): the backward then returns zeros, every row being
// ignored, as PyTorch does; the NaN shows in the loss, not in the gradients. Targets are checked
// by the kernel, as in the forward. Deterministic: rows are independent, n is counted serially.
Tensor cross_entropy_backward(const Tensor& grad, const Tensor& logits, const Tensor& targets,
                              const Tensor& lse, std::int64_t ignore_index = -100);
Tensor nll_loss_backward(const Tensor& grad, const Tensor& log_probs, const Tensor& targets,
                         std::int64_t ignore_index = -100);

}  // namespace grove::ops
