// nn::CausalSelfAttention; see attention.h. Dimension letters: B batch, T sequence length,
// C embedding width, H heads, D = C / H head width.
#include "models/nn/attention.h"

#include <cmath>
#include <limits>
#include <vector>

#include "core/error.h"
#include "ops/attention.h"
#include "ops/shape.h"

namespace grove::nn {

CausalSelfAttention::CausalSelfAttention(std::int64_t embd, std::int64_t heads, std::int64_t block)
    : Module("CausalSelfAttention"), embd_(embd), heads_(heads), block_(block) {
  GROVE_CHECK(embd > 0 && heads > 0 && block > 0, "CausalSelfAttention: expected positive embd, ",
              "heads and block, got ", embd, ", ", heads, " and ", block);
  GROVE_CHECK(embd % heads == 0, "CausalSelfAttention: expected embd divisible by heads, got ",
              "embd ", embd, " and heads ", heads, "; each head takes embd / heads channels");
  qkv_ = register_module("qkv", std::make_shared<Linear>(embd, 3 * embd));
  proj_ = register_module("proj", std::make_shared<Linear>(embd, embd));
  // causal_mask: (block, block), true where the key position is after the query position.
  register_buffer("causal_mask", ops::triu(ones({block, block}, DType::Bool), 1),
                  /*persistent=*/false);
}

Tensor CausalSelfAttention::forward(const Tensor& input) {
  GROVE_CHECK(input.dim() == 3 && input.size(2) == embd_, "CausalSelfAttention: expected an ",
              "input of shape (B, T, ", embd_, "), got ", input.sizes());
  const std::int64_t batch = input.size(0), length = input.size(1);
  const std::int64_t head_width = embd_ / heads_;
  GROVE_CHECK(length <= block_,
              "CausalSelfAttention: expected a sequence of at most block = ", block_,
              " positions, got ", length, "; crop the context to the last ", block_, " tokens");

  // q, k, v: (B, T, H, D) views of the projection's (B, T, 3C) rows, read in place; the op's
  // output is (B, T, H, D) contiguous, the heads merged when viewed as (B, T, C).
  const std::vector<Tensor> parts = ops::chunk(qkv_->forward(input), 3, -1);  // 3 x (B, T, C)
  const auto split_heads = [&](const Tensor& x) {
    return x.view({batch, length, heads_, head_width});
  };
  const Tensor merged =
      ops::attention(split_heads(parts[0]), split_heads(parts[1]), split_heads(parts[2]),
                     /*causal=*/true, 1.0 / std::sqrt(static_cast<double>(head_width)))
          .view({batch, length, embd_});  // (B, T, C)
  return proj_->forward(merged);
}

std::string CausalSelfAttention::extra_repr() const {
  return "embd=" + std::to_string(embd_) + ", heads=" + std::to_string(heads_) +
         ", block=" + std::to_string(block_);
}

}  // namespace grove::nn
