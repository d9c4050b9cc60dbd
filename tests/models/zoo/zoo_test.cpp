// The models: the reference models' parameter counts and names equal PyTorch's harness; for
// every registered model (zoo::model_specs(), so a new model is covered with no edit here)
// make_model by its name, output shapes and initial losses near chance by its task, and a few
// SGD steps on one fixed batch lowering the loss (the forward and backward of the whole model
// are wired); the GPT's causality and sampling.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string_view>

#include "autograd/autograd.h"
#include "models/zoo/cnn.h"
#include "models/zoo/gpt.h"
#include "models/zoo/mlp.h"
#include "models/zoo/registry.h"
#include "ops/inplace.h"
#include "ops/random.h"
#include "ops/softmax.h"

namespace grove::zoo {
namespace {

float loss_of(nn::Module& model, const Tensor& inputs, const Tensor& targets) {
  const Tensor logits = model(inputs);
  const std::int64_t classes = logits.size(-1);
  return ops::cross_entropy(logits.view({-1, classes}), targets.view({-1})).item<float>();
}

// Plain SGD steps on one batch; returns the loss before each step.
std::vector<float> sgd_steps(nn::Module& model, const Tensor& inputs, const Tensor& targets,
                             int steps, double lr) {
  std::vector<float> losses;
  for (int step = 0; step < steps; ++step) {
    model.zero_grad();
    const Tensor logits = model(inputs);
    const Tensor loss = ops::cross_entropy(logits.view({-1, logits.size(-1)}), targets.view({-1}));
    losses.push_back(loss.item<float>());
    loss.backward();
    const autograd::NoGradGuard no_grad;
    for (const Tensor& parameter : model.parameters()) ops::add_(parameter, parameter.grad(), -lr);
  }
  return losses;
}

TEST(Zoo, ParameterCountsEqualPyTorchs) {
  // mlp: (784*256 + 256) + (256*256 + 256) + (256*10 + 10) = 200960 + 65792 + 2570
  EXPECT_EQ(make_model("mlp")->parameter_count(), 269322);
  // cnn: c1 32*1*3*3 + 32 = 320; c2 64*32*3*3 + 64 = 18496; fc1 3136*128 + 128 = 401536;
  //      fc2 128*10 + 10 = 1290
  EXPECT_EQ(make_model("cnn")->parameter_count(), 421642);
  static_assert(320 + 18496 + 401536 + 1290 == 421642);
  // gpt: tok 128*128 = 16384; pos 64*128 = 8192; per block ln1 256, qkv 128*384 + 384 = 49536,
  //      proj 128*128 + 128 = 16512, ln2 256, fc 128*512 + 512 = 66048,
  //      fc_proj 512*128 + 128 = 65664 -> 198272, times 4 = 793088; ln_f 256; head 128*128.
  EXPECT_EQ(make_model("gpt")->parameter_count(), 834304);
  static_assert(256 + 49536 + 16512 + 256 + 66048 + 65664 == 198272);
  static_assert(16384 + 8192 + 4 * 198272 + 256 + 16384 == 834304);
}

std::vector<std::string> names(const nn::Module& model) {
  std::vector<std::string> out;
  for (const auto& entry : model.named_parameters()) out.push_back(entry.first);
  return out;
}

TEST(Zoo, ParameterNamesFollowTheHarness) {
  EXPECT_EQ(names(Mlp()), (std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight",
                                                    "fc2.bias", "fc3.weight", "fc3.bias"}));
  EXPECT_EQ(names(Cnn()),
            (std::vector<std::string>{"c1.weight", "c1.bias", "c2.weight", "c2.bias", "fc1.weight",
                                      "fc1.bias", "fc2.weight", "fc2.bias"}));
  const std::vector<std::string> gpt = names(Gpt());
  const std::vector<std::string> first_block = {
      "blocks.0.ln1.weight",    "blocks.0.ln1.bias",         "blocks.0.attn.qkv.weight",
      "blocks.0.attn.qkv.bias", "blocks.0.attn.proj.weight", "blocks.0.attn.proj.bias",
      "blocks.0.ln2.weight",    "blocks.0.ln2.bias",         "blocks.0.fc.weight",
      "blocks.0.fc.bias",       "blocks.0.fc_proj.weight",   "blocks.0.fc_proj.bias"};
  ASSERT_EQ(gpt.size(), 2u + 4 * 12 + 3);
  EXPECT_EQ(gpt[0], "tok.weight");
  EXPECT_EQ(gpt[1], "pos.weight");
  EXPECT_EQ(std::vector<std::string>(gpt.begin() + 2, gpt.begin() + 14), first_block);
  EXPECT_EQ(gpt[2 + 3 * 12], "blocks.3.ln1.weight");
  EXPECT_EQ(std::vector<std::string>(gpt.end() - 3, gpt.end()),
            (std::vector<std::string>{"ln_f.weight", "ln_f.bias", "head.weight"}));
}

TEST(Zoo, MakeModelBuildsEachRegisteredModelByName) {
  EXPECT_EQ(make_model("mlp")->type_name(), "Mlp");
  EXPECT_EQ(make_model("cnn")->type_name(), "Cnn");
  EXPECT_EQ(make_model("gpt")->type_name(), "Gpt");
  EXPECT_EQ(make_model("resnet")->type_name(), "ResNet");
  for (const ModelSpec& spec : model_specs()) {
    const auto model = make_model(spec.name);
    ASSERT_NE(model, nullptr) << spec.name;
    EXPECT_GT(model->parameter_count(), 0) << spec.name;
  }
  try {
    make_model("transformer-xl");
    FAIL() << "expected an error";
  } catch (const Error& error) {
    // The message names what was asked for and every registered model.
    const std::string message = error.message();
    EXPECT_NE(message.find("'transformer-xl'"), std::string::npos) << message;
    for (const ModelSpec& spec : model_specs()) {
      EXPECT_NE(message.find(spec.name), std::string::npos) << message;
    }
  }
}

// A batch of random data of the model's real shapes, by its task: images and labels for a
// classifier, token ids and next tokens (T = min(tokens, the context)) for a language model.
std::pair<Tensor, Tensor> random_batch(const ModelSpec& spec, const nn::Module& model,
                                       std::int64_t batch, std::int64_t tokens) {
  switch (spec.task) {
    case TaskKind::ImageClassification:
      return {ops::randn({batch, 1, 28, 28}), ops::randint(0, 10, {batch})};
    case TaskKind::LanguageModel: {
      const std::int64_t length = std::min(tokens, spec.context_length(model));
      return {ops::randint(0, 128, {batch, length}), ops::randint(0, 128, {batch, length})};
    }
  }
  return {};
}

TEST(Zoo, GptInitIsGpt2s) {
  manual_seed(31);
  Gpt gpt;
  for (const auto& [name, parameter] : gpt.named_parameters()) {
    const std::vector<double> data = parameter.to_vector<double>();
    double mean = 0.0, square = 0.0;
    for (const double value : data) {
      mean += value / static_cast<double>(data.size());
      square += value * value / static_cast<double>(data.size());
    }
    if (name.find("ln") != std::string::npos) {
      EXPECT_EQ(mean, name.ends_with("weight") ? 1.0 : 0.0) << name;  // LayerNorm: 1 and 0
      EXPECT_EQ(square, name.ends_with("weight") ? 1.0 : 0.0) << name;
    } else if (name.ends_with("bias")) {
      EXPECT_EQ(square, 0.0) << name;
    } else {
      // N(0, 0.02) with >= 8192 draws: the sample std's relative error is below 1 / sqrt(2n)
      // < 0.8%, so 5% is > 6 errors.
      EXPECT_NEAR(std::sqrt(square), 0.02, 0.001) << name;
    }
  }
}

TEST(Zoo, OutputShapesAndInitialLossNearChance) {
  manual_seed(32);
  const Tensor images = ops::randn({32, 1, 28, 28});
  const Tensor labels = ops::randint(0, 10, {32});
  for (const ModelSpec& spec : model_specs()) {
    if (spec.task != TaskKind::ImageClassification) continue;  // the gpt: below
    const char* name = spec.name;
    const auto model = spec.make();
    EXPECT_EQ(model->forward(images).sizes(), IntArrayRef({32, 10})) << name;
    // Chance is ln 10 = 2.303. PyTorch's default init keeps the logits' spread ~0.1-0.3 on
    // unit-variance inputs, which moves the loss of 32 random labels by a few hundredths; 0.15
    // leaves room for that; a wrong init scale spreads the logits and lifts the loss above it.
    const float loss = loss_of(*model, images, labels);
    std::printf("%s initial loss %.4f\n", name, loss);
    EXPECT_NEAR(loss, std::log(10.0), 0.15) << name;
  }
  Gpt gpt;
  const Tensor tokens = ops::randint(0, 128, {4, 64});
  const Tensor targets = ops::randint(0, 128, {4, 64});
  EXPECT_EQ(gpt(tokens).sizes(), IntArrayRef({4, 64, 128}));
  EXPECT_EQ(gpt(tokens.slice(1, 0, 10)).sizes(), IntArrayRef({4, 10, 128}));
  // Chance is ln 128 = 4.852. With N(0, 0.02) weights the logits' std is ~0.02 * sqrt(128) ~
  // 0.2 after the final LayerNorm, which moves the loss by a few hundredths (4.90 with this
  // seed); 0.1 leaves room for that and catches a wrong init scale.
  const float loss = loss_of(gpt, tokens, targets);
  std::printf("gpt initial loss %.4f\n", loss);
  EXPECT_NEAR(loss, std::log(128.0), 0.1);
  EXPECT_THROW(gpt(ops::randint(0, 128, {1, 65})), Error);  // longer than block
}

TEST(Zoo, GptIsCausal) {
  manual_seed(33);
  Gpt gpt;
  const Tensor tokens = ops::randint(0, 128, {2, 20});
  const Tensor changed = tokens.clone();
  changed.select(1, 12).fill_(std::int64_t{7});  // a different later token in every row
  changed.select(1, 15).fill_(std::int64_t{99});
  const Tensor before = gpt(tokens), after = gpt(changed);
  // Positions 0..11 see only tokens 0..11, which are unchanged: exactly the same logits.
  EXPECT_EQ(before.slice(1, 0, 12).to_vector<float>(), after.slice(1, 0, 12).to_vector<float>());
  EXPECT_NE(before.select(1, 15).to_vector<float>(), after.select(1, 15).to_vector<float>());
}

// A small GPT for the sampling tests (same code, fewer and narrower layers, short context).
Gpt small_gpt() {
  manual_seed(34);
  return Gpt(GptConfig{.vocab = 16, .block = 8, .layers = 2, .heads = 2, .embd = 16});
}

// With tie_weights the head is the token embedding: no head parameter, the same logits as an
// untied model whose head holds a copy of tok.weight, and tok.weight's gradient is the sum of
// the untied model's embedding and head gradients.
TEST(Zoo, TiedWeightsShareTheEmbeddingAndSumBothGradients) {
  const GptConfig untied{.vocab = 16, .block = 8, .layers = 2, .heads = 2, .embd = 16};
  GptConfig tied_config = untied;
  tied_config.tie_weights = true;
  manual_seed(36);
  Gpt separate(untied);
  Gpt tied(tied_config);
  const auto named = [](const Gpt& gpt, std::string_view wanted) {
    for (const auto& [name, parameter] : gpt.named_parameters()) {
      if (name == wanted) return parameter;
    }
    return Tensor();
  };
  ASSERT_EQ(tied.named_parameters().size() + 1, separate.named_parameters().size());
  EXPECT_FALSE(named(tied, "head.weight").defined());
  {  // the same weights, and the untied head a copy of the embedding
    autograd::NoGradGuard no_grad;
    for (const auto& [name, parameter] : tied.named_parameters()) {
      ops::copy_(parameter, named(separate, name));
    }
    ops::copy_(named(separate, "head.weight"), named(separate, "tok.weight"));
  }
  const Tensor tokens = from_vector<std::int64_t>({1, 5, 3, 9, 2, 15, 0, 7}, {2, 4});
  const Tensor targets = from_vector<std::int64_t>({5, 3, 9, 2, 15, 0, 7, 4}, {8});
  const Tensor separate_logits = separate(tokens);
  const Tensor tied_logits = tied(tokens);
  EXPECT_EQ(separate_logits.to_vector<float>(), tied_logits.to_vector<float>());
  ops::cross_entropy(separate_logits.view({-1, 16}), targets).backward();
  ops::cross_entropy(tied_logits.view({-1, 16}), targets).backward();
  const std::vector<float> tok = named(separate, "tok.weight").grad().to_vector<float>();
  const std::vector<float> head = named(separate, "head.weight").grad().to_vector<float>();
  const std::vector<float> both = named(tied, "tok.weight").grad().to_vector<float>();
  ASSERT_EQ(both.size(), tok.size());
  for (std::size_t i = 0; i < both.size(); ++i) {
    EXPECT_NEAR(both[i], tok[i] + head[i], 1e-6f) << "element " << i;
  }
}

TEST(Zoo, GenerateIsReproducibleForASeed) {
  Gpt gpt = small_gpt();
  const Tensor prompt = from_vector<std::int64_t>({1, 2, 3}, {1, 3});
  Generator first(5), second(5), other(6);
  const Tensor a = gpt.generate(prompt, 12, 1.0, first);
  const Tensor b = gpt.generate(prompt, 12, 1.0, second);
  const Tensor c = gpt.generate(prompt, 12, 1.0, other);
  EXPECT_EQ(a.sizes(), IntArrayRef({1, 15}));
  const std::vector<std::int64_t> tokens = a.to_vector<std::int64_t>();
  EXPECT_EQ(std::vector<std::int64_t>(tokens.begin(), tokens.begin() + 3),
            (std::vector<std::int64_t>{1, 2, 3}));  // the prompt comes first
  for (const std::int64_t token : tokens) EXPECT_TRUE(token >= 0 && token < 16) << token;
  EXPECT_EQ(tokens, b.to_vector<std::int64_t>());
  // Another seed: 12 tokens from a near-uniform distribution over 16 all repeating has
  // probability ~16^-12.
  EXPECT_NE(tokens, c.to_vector<std::int64_t>());
}

// A tiny positive temperature divided the logits into infinities, whose softmax was NaN, and
// the sampler then always took the last token. At the limit sampling is the greedy choice.
TEST(Zoo, GenerateAtATinyTemperatureIsGreedy) {
  Gpt gpt = small_gpt();
  const Tensor prompt = from_vector<std::int64_t>({1, 2, 3}, {1, 3});
  Generator first(5), second(5);
  const Tensor greedy = gpt.generate(prompt, 12, 0.0, first);
  for (const double temperature : {1e-300, 1e-200, 4.9e-324}) {
    EXPECT_EQ(gpt.generate(prompt, 12, temperature, second).to_vector<std::int64_t>(),
              greedy.to_vector<std::int64_t>())
        << "temperature " << temperature;
  }
}

TEST(Zoo, GenerateAtTemperatureZeroIsArgmaxWithACroppedContext) {
  Gpt gpt = small_gpt();
  Generator generator(7);
  const Tensor prompt = from_vector<std::int64_t>({4, 5, 6, 7, 8, 9}, {1, 6});
  const std::uint64_t offset = generator.offset();
  const Tensor sequence = gpt.generate(prompt, 6, 0.0, generator);  // 12 > block = 8: crops
  EXPECT_EQ(generator.offset(), offset);  // greedy draws no random numbers
  const std::vector<std::int64_t> tokens = sequence.to_vector<std::int64_t>();
  ASSERT_EQ(tokens.size(), 12u);
  for (std::int64_t length = 6; length < 12; ++length) {
    const std::int64_t start = std::max<std::int64_t>(0, length - 8);
    const Tensor context = sequence.slice(1, start, length);
    const std::vector<float> logits = gpt(context).select(1, length - start - 1).to_vector<float>();
    const auto best = std::max_element(logits.begin(), logits.end()) - logits.begin();
    EXPECT_EQ(tokens[static_cast<std::size_t>(length)], best) << "position " << length;
  }
}

TEST(Zoo, FewSgdStepsOverfitOneBatch) {
  manual_seed(35);
  // Each model on one fixed batch: the loss after a few steps must be clearly lower. Steps and
  // sizes are kept small, since the suite also runs under the sanitizers (~10x slower).
  struct Case {
    std::shared_ptr<nn::Module> model;
    Tensor inputs, targets;
    int steps;
    double lr;
  };
  // Every registered model: a batch of 8 (a classifier) or 2 x 16 tokens (a language model), 5
  // steps at lr 0.1; the models below, tuned once, differ.
  struct Tuning {
    const char* name;
    std::int64_t batch;
    int steps;
    double lr;
  };
  const Tuning tunings[] = {{"mlp", 16, 5, 0.1}, {"cnn", 8, 4, 0.03}, {"gpt", 2, 4, 0.2}};
  std::vector<Case> cases;
  for (const ModelSpec& spec : model_specs()) {
    Tuning tuning{spec.name, spec.task == TaskKind::LanguageModel ? 2 : 8, 5, 0.1};
    for (const Tuning& tuned : tunings) {
      if (std::string_view(tuned.name) == spec.name) tuning = tuned;
    }
    const auto model = spec.make();
    const auto [inputs, targets] = random_batch(spec, *model, tuning.batch, 16);
    cases.push_back({model, inputs, targets, tuning.steps, tuning.lr});
  }
  for (const Case& c : cases) {
    const std::vector<float> losses = sgd_steps(*c.model, c.inputs, c.targets, c.steps, c.lr);
    const float final_loss = loss_of(*c.model, c.inputs, c.targets);
    std::printf("%s losses:", c.model->type_name().c_str());
    for (const float loss : losses) std::printf(" %.4f", loss);
    std::printf(" -> %.4f\n", final_loss);
    for (std::size_t i = 1; i < losses.size(); ++i) {
      EXPECT_LT(losses[i], losses[i - 1]) << c.model->type_name() << " step " << i;
    }
    // Memorising a handful of random labels is easy: at least 10% lower after a few steps.
    EXPECT_LT(final_loss, 0.9f * losses.front()) << c.model->type_name();
  }
}

TEST(Zoo, PrintsTheModelTree) {
  const std::string text = Gpt().to_string();
  EXPECT_NE(text.find("(attn): CausalSelfAttention(\n"), std::string::npos) << text;
  EXPECT_NE(text.find("embd=128, heads=4, block=64"), std::string::npos) << text;
  EXPECT_NE(text.find("(head): Linear(in_features=128, out_features=128, bias=false)"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace grove::zoo
