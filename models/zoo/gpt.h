// zoo::Gpt: the reference character-level GPT, as the libtorch harness (anchors/libtorch/
// gpt_bench.cpp, beside DESIGN.md): token and position embeddings, `layers` pre-LayerNorm blocks
// (x + attn(ln1(x)), then x + fc_proj(gelu(fc(ln2(x))))), a final LayerNorm and a bias-free
// head to vocab logits (or, with tie_weights, the token embedding as the head). With the default
// GptConfig: 834,304 parameters.
//
// Names: tok, pos, blocks.N.{ln1, attn, ln2, fc, fc_proj}, ln_f, head (not with tie_weights). The
// attention is an nn::CausalSelfAttention child, so its layers are one level deeper than in the
// harness: grove's blocks.N.attn.qkv / blocks.N.attn.proj are the harness's blocks.N.qkv /
// blocks.N.proj (and the harness's blocks.N.causal_mask buffer is not in grove's state_dict). Init
// (GPT-2, as the harness): every weight except LayerNorms' ~ N(0, 0.02), embeddings included; every
// bias 0; LayerNorms weight 1, bias 0.
//
// Not a KV-cached or batched sampler: generate() reruns the whole (cropped) context per token.
// Contract: as nn::Module (built on the CPU, then to(device)); not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "core/rng.h"
#include "models/nn/attention.h"
#include "models/nn/embedding.h"
#include "models/nn/layers.h"
#include "models/nn/linear.h"
#include "models/nn/module.h"
#include "models/nn/normalization.h"
#include "models/nn/sequential.h"

namespace grove::zoo {

struct GptConfig {
  std::int64_t vocab = 128;  // token ids in [0, vocab)
  std::int64_t block = 64;   // longest context
  std::int64_t layers = 4;
  std::int64_t heads = 4;
  std::int64_t embd = 128;  // divisible by heads
  // The head's weight is the token embedding's (GPT-2's and llm.c's weight tying): logits =
  // ln_f(x) tok.weight^T, no head parameter, and tok.weight's gradient is the sum of both uses.
  bool tie_weights = false;
  // Dropout (in training mode) on the embeddings' sum and on each block's two residual
  // branches, as nanoGPT's resid/embedding dropout; in [0, 1). 0: no dropout op at all. The
  // attention probabilities are not dropped (cuDNN's fused attention would need its own).
  double dropout = 0.0;
};

// The named configurations `grove train --model gpt --preset NAME` starts from.
struct GptPreset {
  const char* name;
  const char* summary;
  GptConfig config;
};
// tiny (GptConfig{}: the default), char (nanoGPT's shakespeare-char shape over the corpus's 128
// byte tokens), gpt2s (GPT-2 small: 50304 padded vocabulary, 1024 context, 12 x 12 x 768, tied,
// 124,475,904 parameters).
std::span<const GptPreset> gpt_presets();
// The preset of `name`; an unknown name is an error listing the presets.
const GptConfig& gpt_preset(std::string_view name);
// Checks a config: sizes positive, embd divisible by heads, dropout in [0, 1); the error names
// the field and what it needs.
void check_gpt_config(const GptConfig& config);

// One transformer block; its MLP is 4 embd wide.
class Block : public nn::Module {
 public:
  explicit Block(const GptConfig& config);
  // x: (B, T, C) -> (B, T, C)
  Tensor forward(const Tensor& input) override;

 private:
  std::shared_ptr<nn::LayerNorm> ln1_, ln2_;
  std::shared_ptr<nn::CausalSelfAttention> attn_;
  std::shared_ptr<nn::Linear> fc_, fc_proj_;
  std::shared_ptr<nn::Dropout> drop_;  // null without dropout
};

class Gpt : public nn::Module {
 public:
  explicit Gpt(GptConfig config = {});

  // idx: (B, T) int64 token ids, T <= block -> logits (B, T, vocab). The loss over all
  // positions is ops::cross_entropy(logits.view({-1, vocab}), targets.view({-1})).
  Tensor forward(const Tensor& idx) override;

  // Appends `tokens` sampled tokens to `prompt` ((1, T0) int64, T0 >= 1, on the model's
  // device) and returns the whole sequence (1, T0 + tokens). Each step runs forward on the last
  // `block` tokens under no-grad and takes the last position's logits: temperature 0 picks the
  // argmax (greedy, no random numbers); temperature > 0 samples from
  // softmax(logits / temperature) with one U[0, 1) draw from `generator` per token, so a seed
  // gives the same text. Reads logits on the host every step (blocks; not capturable).
  Tensor generate(const Tensor& prompt, std::int64_t tokens, double temperature,
                  Generator& generator);

  const GptConfig& config() const { return config_; }

 private:
  GptConfig config_;
  std::shared_ptr<nn::Embedding> tok_, pos_;
  std::shared_ptr<nn::Sequential> blocks_;
  std::shared_ptr<nn::LayerNorm> ln_f_;
  std::shared_ptr<nn::Linear> head_;   // null with tie_weights
  std::shared_ptr<nn::Dropout> drop_;  // null without dropout
};

}  // namespace grove::zoo
