// nn::CausalSelfAttention: multi-head self-attention where position t attends to positions
// <= t only (the reference GPT's attention), as one ops::attention call (ops/attention.h: the
// scores, the causal mask, the softmax and the weighted sum of values in one op, which never
// stores the (B, H, T, T) scores; no dropout, no KV cache). The reference harness writes the
// same as matmul + masked_fill + softmax + matmul; the results agree to rounding.
//
// Children: qkv = Linear(embd, 3 embd) (queries, keys and values side by side) and
// proj = Linear(embd, embd), so its parameters are "qkv.weight", "qkv.bias", "proj.weight",
// "proj.bias". Buffer: "causal_mask", (block, block) bool, true above the diagonal (the future
// positions masked out); forward does not read it (the op masks by position), it is kept for
// code that inspects the module's buffers. The mask is a non-persistent buffer: to() moves it with
// the module, but it is not in state_dict(), since it is rebuilt from `block` and checkpoints hold
// weights only (PyTorch's reference harness keeps it in its state dict: load that with
// strict = false, or drop the "causal_mask" entries first).
// Contract: as nn::Module (not thread-safe); forward allocates its output.
#pragma once

#include <cstdint>
#include <memory>

#include "models/nn/linear.h"
#include "models/nn/module.h"

namespace grove::nn {

class CausalSelfAttention : public Module {
 public:
  // embd divisible by heads; block is the longest sequence forward accepts.
  CausalSelfAttention(std::int64_t embd, std::int64_t heads, std::int64_t block);

  // x: (B, T, C = embd) with T <= block -> (B, T, C). With D = C / heads, per head:
  //   att = softmax(q k^T / sqrt(D) with the future masked to -inf), y = att v,
  // heads concatenated back to (B, T, C), then proj.
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  const std::shared_ptr<Linear>& qkv() const { return qkv_; }
  const std::shared_ptr<Linear>& proj() const { return proj_; }

 private:
  std::int64_t embd_;
  std::int64_t heads_;
  std::int64_t block_;
  std::shared_ptr<Linear> qkv_;
  std::shared_ptr<Linear> proj_;
};

}  // namespace grove::nn
