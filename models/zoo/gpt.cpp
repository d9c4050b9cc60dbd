// zoo::Gpt and its Block; see gpt.h. Dimension letters: B batch, T positions, C = embd,
// V = vocab.
#include "models/zoo/gpt.h"

#include <algorithm>
#include <vector>

#include "autograd/grad_mode.h"
#include "core/error.h"
#include "models/nn/init.h"
#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "ops/random.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "ops/softmax.h"

namespace grove::zoo {

Block::Block(const GptConfig& config) : nn::Module("Block") {
  ln1_ = register_module("ln1", std::make_shared<nn::LayerNorm>(config.embd));
  attn_ = register_module(
      "attn", std::make_shared<nn::CausalSelfAttention>(config.embd, config.heads, config.block));
  ln2_ = register_module("ln2", std::make_shared<nn::LayerNorm>(config.embd));
  fc_ = register_module("fc", std::make_shared<nn::Linear>(config.embd, 4 * config.embd));
  fc_proj_ = register_module("fc_proj", std::make_shared<nn::Linear>(4 * config.embd, config.embd));
  if (config.dropout > 0)
    drop_ = register_module("drop", std::make_shared<nn::Dropout>(config.dropout));
}

Tensor Block::forward(const Tensor& input) {
  const auto branch = [&](Tensor x) { return drop_ != nullptr ? drop_->forward(x) : x; };
  Tensor x = input + branch(attn_->forward(ln1_->forward(input)));                  // (B, T, C)
  return x + branch(fc_proj_->forward(ops::gelu(fc_->forward(ln2_->forward(x)))));  // (B, T, C)
}

std::span<const GptPreset> gpt_presets() {
  static const GptPreset kPresets[] = {
      {"tiny", "4 x 4 heads x 128, context 64 (834,304 parameters)", GptConfig{}},
      {"char", "nanoGPT's shakespeare-char shape: 6 x 6 heads x 384, context 256 (10.8M)",
       GptConfig{.vocab = 128, .block = 256, .layers = 6, .heads = 6, .embd = 384}},
      {"gpt2s", "GPT-2 small: 12 x 12 heads x 768, context 1024, 50304 tokens, tied (124.5M)",
       GptConfig{.vocab = 50304,
                 .block = 1024,
                 .layers = 12,
                 .heads = 12,
                 .embd = 768,
                 .tie_weights = true}},
  };
  return kPresets;
}

const GptConfig& gpt_preset(std::string_view name) {
  std::string names;
  for (const GptPreset& preset : gpt_presets()) {
    if (preset.name == name) return preset.config;
    names += (names.empty() ? "" : ", ") + std::string(preset.name);
  }
  GROVE_CHECK(false, "gpt: no preset named '", name, "'; the presets are ", names);
  return gpt_presets().front().config;  // not reached
}

void check_gpt_config(const GptConfig& config) {
  GROVE_CHECK(config.vocab > 0 && config.block > 0 && config.layers >= 0 && config.heads > 0 &&
                  config.embd > 0,
              "gpt: expected vocab, block, heads and embd > 0 and layers >= 0, got vocab ",
              config.vocab, ", block ", config.block, ", layers ", config.layers, ", heads ",
              config.heads, ", embd ", config.embd);
  GROVE_CHECK(config.embd % config.heads == 0, "gpt: embd (", config.embd,
              ") must be divisible by heads (", config.heads, "): each head takes embd / heads");
  GROVE_CHECK(config.dropout >= 0 && config.dropout < 1, "gpt: expected dropout in [0, 1), got ",
              config.dropout);
}

namespace {

// GPT-2's init, as the harness does it: in every module but the LayerNorms, biases 0 and every
// other parameter (Linear and Embedding weights) ~ N(0, 0.02). Draws in registration order.
void init_gpt2(const nn::Module& module) {
  if (module.type_name() == "LayerNorm") return;  // keeps weight 1, bias 0
  for (const auto& [name, parameter] : module.named_parameters()) {
    if (name.find('.') != std::string::npos) continue;  // a child's: visited below
    if (name == "bias") {
      nn::init::zeros_(parameter);
    } else {
      nn::init::normal_(parameter, 0.0, 0.02);
    }
  }
  for (const auto& entry : module.named_children()) init_gpt2(*entry.second);
}

}  // namespace

Gpt::Gpt(GptConfig config) : nn::Module("Gpt"), config_(config) {
  check_gpt_config(config);
  tok_ = register_module("tok", std::make_shared<nn::Embedding>(config.vocab, config.embd));
  pos_ = register_module("pos", std::make_shared<nn::Embedding>(config.block, config.embd));
  blocks_ = register_module("blocks", std::make_shared<nn::Sequential>());
  for (std::int64_t layer = 0; layer < config.layers; ++layer) {
    blocks_->push_back(std::make_shared<Block>(config));
  }
  ln_f_ = register_module("ln_f", std::make_shared<nn::LayerNorm>(config.embd));
  if (config.dropout > 0)
    drop_ = register_module("drop", std::make_shared<nn::Dropout>(config.dropout));
  if (!config.tie_weights) {
    head_ = register_module(
        "head", std::make_shared<nn::Linear>(config.embd, config.vocab, /*bias=*/false));
  }
  init_gpt2(*this);
}

Tensor Gpt::forward(const Tensor& idx) {
  GROVE_CHECK(idx.dim() == 2 && idx.dtype() == DType::Int64, "Gpt: expected token ids of shape ",
              "(B, T) and dtype int64, got shape ", idx.sizes(), " and dtype ", idx.dtype());
  const std::int64_t length = idx.size(1);
  GROVE_CHECK(length >= 1 && length <= config_.block, "Gpt: expected 1 to block = ", config_.block,
              " positions, got ", length, "; crop the context to its last ", config_.block,
              " tokens");
  const Tensor positions = arange(static_cast<double>(length),
                                  TensorOptions(DType::Int64).device(idx.device()));  // (T)
  Tensor x = tok_->forward(idx) + pos_->forward(positions);  // (B, T, C) + (T, C)
  if (drop_ != nullptr) x = drop_->forward(x);
  x = blocks_->forward(x);  // (B, T, C)
  x = ln_f_->forward(x);
  if (head_ == nullptr) return ops::linear(x, tok_->weight());  // tied: (B, T, V)
  return head_->forward(x);                                     // (B, T, V)
}

namespace {

// The index i of the first cumulative probability above u * total: inverse-CDF sampling from
// unnormalised probabilities (zero-probability entries are never picked).
std::int64_t sample_index(const std::vector<double>& probabilities, double u) {
  double total = 0.0;
  for (const double p : probabilities) total += p;
  const double target = u * total;
  double cumulative = 0.0;
  std::int64_t last_positive = 0;
  for (std::size_t i = 0; i < probabilities.size(); ++i) {
    if (probabilities[i] <= 0.0) continue;
    cumulative += probabilities[i];
    last_positive = static_cast<std::int64_t>(i);
    if (cumulative > target) return last_positive;
  }
  return last_positive;  // rounding left target at the very top
}

}  // namespace

Tensor Gpt::generate(const Tensor& prompt, std::int64_t tokens, double temperature,
                     Generator& generator) {
  GROVE_CHECK(prompt.dim() == 2 && prompt.size(0) == 1 && prompt.size(1) >= 1 &&
                  prompt.dtype() == DType::Int64,
              "Gpt::generate: expected a prompt of shape (1, T0) with T0 >= 1 and dtype int64, ",
              "got shape ", prompt.sizes(), " and dtype ", prompt.dtype());
  GROVE_CHECK(tokens >= 0, "Gpt::generate: expected tokens >= 0, got ", tokens);
  GROVE_CHECK(temperature >= 0.0, "Gpt::generate: expected temperature >= 0 (0 = greedy), got ",
              temperature);
  const autograd::NoGradGuard no_grad;
  Tensor sequence = prompt;  // (1, T0 + generated so far)
  for (std::int64_t step = 0; step < tokens; ++step) {
    const std::int64_t length = sequence.size(1);
    const Tensor context = sequence.slice(1, length - std::min(length, config_.block), length);
    const Tensor logits = forward(context).select(1, context.size(1) - 1);  // (1, V)
    std::int64_t next = 0;
    if (temperature == 0.0) {
      next = ops::argmax(logits, -1).item<std::int64_t>();
    } else {
      // Shifted by the largest logit before dividing: the largest scaled logit is then 0, so no
      // temperature, however small, makes an infinity (whose difference with another, NaN,
      // picked the last token). As the temperature goes to 0 this is the greedy choice.
      const Tensor wide = logits.to(DType::Float64);
      const Tensor probabilities = ops::softmax((wide - ops::max(wide)) / temperature, -1);
      const double u =
          ops::rand({1}, TensorOptions(DType::Float64), &generator).item<double>();  // U[0, 1)
      next = sample_index(probabilities.to_vector<double>(), u);
    }
    const Tensor next_token = from_vector<std::int64_t>({next}, {1, 1}, sequence.device());
    sequence = ops::cat({sequence, next_token}, 1);
  }
  return sequence;
}

}  // namespace grove::zoo
