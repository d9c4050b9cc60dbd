// Gradient clipping by the global L2 norm (PyTorch's torch.nn.utils.clip_grad_norm_ with
// norm_type 2, error_if_nonfinite off), computed entirely with ops on the gradients' device.
//
// Not here: other norms, clipping by value, an error on a non-finite norm (that would need a
// host read).
//
// Invariant: nothing is read on the host and nothing branches on a value: the scale factor is a
// device tensor and every gradient is multiplied by it, also when it is 1. So clipping costs the
// same on every step, and it may run inside a compiled whole step (it is traced and replayed like
// any op sequence).
#pragma once

#include <vector>

#include "core/tensor.h"

namespace grove::optim {

// Over the parameters whose grad() is defined (the others are skipped):
//   total = sqrt(sum over gradients of sum(grad^2))
//   every grad *= min(1, max_norm / (total + 1e-6))          (in place)
// Returns total, the norm before clipping, as a 0-d tensor on the gradients' device (float64 if
// any gradient is float64, else float32; 0 when no gradient is defined, on the first parameter's
// device or the CPU). A non-finite total gives a scale of 0 or NaN, as in PyTorch.
// max_norm must be finite and > 0; the gradients must share one device. Launches kernels on the
// current stream and returns without waiting. Not thread-safe with other writers of the grads.
Tensor clip_grad_norm_(const std::vector<Tensor>& params, double max_norm);

}  // namespace grove::optim
