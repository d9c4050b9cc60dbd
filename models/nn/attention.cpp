// nn::CausalSelfAttention; see attention.h. Dimension letters: B batch, T sequence length,
// C embedding width, H heads, D = C / H head width.
#include "models/nn/attention.h"

#include <cmath>
#include <limits>
#include <vector>

#include "core/error.h"
#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "ops/shape.h"
#include "ops/softmax.h"

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

  const std::vector<Tensor> parts = ops::chunk(qkv_->forward(input), 3, -1);  // 3 x (B, T, C)
  const auto heads_first = [&](const Tensor& x) {
    return x.view({batch, length, heads_, head_width}).transpose(1, 2);  // (B, H, T, D)
  };
  const Tensor query = heads_first(parts[0]);
  const Tensor key = heads_first(parts[1]);
  const Tensor value = heads_first(parts[2]);

  // att: (B, H, T, T), row t = query t's scores over the keys.
  Tensor att = ops::matmul(query, key.transpose(-2, -1)) *
               (1.0 / std::sqrt(static_cast<double>(head_width)));
  const Tensor mask = buffer("causal_mask").slice(0, 0, length).slice(1, 0, length);  // (T, T)
  att = ops::masked_fill(att, mask, -std::numeric_limits<double>::infinity());
  att = ops::softmax(att, -1);
  const Tensor heads_out = ops::matmul(att, value);  // (B, H, T, D)
  const Tensor merged =
      heads_out.transpose(1, 2).contiguous().view({batch, length, embd_});  // (B, T, C)
  return proj_->forward(merged);
}

std::string CausalSelfAttention::extra_repr() const {
  return "embd=" + std::to_string(embd_) + ", heads=" + std::to_string(heads_) +
         ", block=" + std::to_string(block_);
}

}  // namespace grove::nn
