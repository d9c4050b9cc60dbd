// Autocast: mixed precision chosen per op, like torch.autocast. Inside an AutocastGuard, the ops
// whose speed comes from the tensor cores run in a 16-bit dtype, the ones whose accuracy needs
// float32 run in float32, and the rest follow their inputs:
//
//   {
//     grove::AutocastGuard autocast(DType::BFloat16);
//     const Tensor logits = model.forward(x);          // linear layers in bfloat16
//     loss = ops::cross_entropy(logits, targets);      // float32 loss, bfloat16 logits read
//   }
//   autograd::backward(loss);                          // each op's gradient in its own dtype
//
// Note [Autocast]
// ~~~~~~~~~~~~~~~
// The guard sets a per-thread policy that dispatch() (ops/dispatch.cpp) applies to each call
// before its checks: the call's floating inputs (values: not the Index, Mask, Count or
// Statistics inputs of its OpEntry) are cast with Tensor::to(dtype), an ordinary differentiable
// copy that autograd and the tracer see, so compile and whole-step graphs capture the casts like
// any op and the backward converts each gradient back to its input's dtype. The one table
// (kAutocastRules in ops/autocast.cpp) names each op's rule:
//   Lower    matmul, linear, bmm, conv2d, attention: float32 inputs are cast to the guard's
//            dtype (float64 ones are left alone, as in PyTorch);
//   Float32  softmax, log_softmax, layer_norm, rms_norm, sum, mean, var, exp, log, pow, sqrt,
//            rsqrt: 16-bit inputs are widened to float32;
//   (none)   cross_entropy, nll_loss: left alone, since they read 16-bit scores as they are and
//            compute in float32 with a float32 loss (Note [A loss is in the compute dtype] in
//            ops/softmax.cpp): a cast would cost a float32 copy of the logits and change nothing;
//   (others) the inputs' dtype; when an op's floating inputs differ (a bfloat16 product added to
//            a float32 residual), all are cast to the widest of them (bfloat16 with float16
//            gives float32). In-place ops are never cast: they write the tensor they are given.
// A cast of a parameter (a leaf that requires gradients) is made once per guard: the guard keeps
// it, keyed by the tensor and its version (an optimizer step bumps the version, so a guard held
// across steps casts again after each), and drops it when the outermost guard ends. Backward
// passes (autograd/engine.cpp) and graph replays (graphs/ir/interpreter.cpp) run with autocast
// off: their ops already have the dtypes the forward chose.
#pragma once

#include <optional>

#include "core/tensor.h"
#include "ops/dispatch.h"

namespace grove::ops {

// What autocast does to one op's inputs.
enum class AutocastRule : std::uint8_t {
  Follow,   // nothing, but mixed floating dtypes are cast to the widest
  Lower,    // float32 inputs to the guard's 16-bit dtype
  Float32,  // 16-bit inputs to float32
};

AutocastRule autocast_rule(OpKind kind);

// Autocast on this thread for the guard's lifetime: `dtype` bfloat16 or float16 turns it on,
// std::nullopt turns it off (for code that must run as written inside an autocast region).
// Guards nest; the innermost decides.
class AutocastGuard {
 public:
  explicit AutocastGuard(std::optional<DType> dtype);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  std::optional<DType> previous_;
};

// The 16-bit dtype of this thread's innermost guard, or nullopt when autocast is off.
std::optional<DType> autocast_dtype();

namespace detail {
// The call's inputs as autocast casts them; empty when they are left as they are. Called by
// dispatch() when autocast is on, once the inputs are counted and defined.
std::vector<Tensor> autocast_inputs(const OpEntry& entry, std::span<const Tensor> inputs);
// True for the ops that write their first input: their names end in '_' (add_, sgd_), as in
// PyTorch; tests/ops/autocast_test.cpp checks the names against each op's infer.
bool is_in_place(OpKind kind);
// Drops the kept casts of this thread: a trace starting or ending must make its own
// (add_op_observer and remove_op_observer call it).
void autocast_forget_casts();
}  // namespace detail

}  // namespace grove::ops

namespace grove {
using ops::AutocastGuard;
}  // namespace grove
