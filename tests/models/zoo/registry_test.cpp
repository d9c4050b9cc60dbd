// The model registry: every entry is complete and consistent with its task (a name, a summary,
// a constructor, sane defaults; a language model can say its context length), names are unique
// and looked up exactly, unknown names are refused with the list, and the tasks' facts (data,
// length unit, metrics) are what the trainer and the program rely on. Loops over the table, so
// a new model is checked with no edit here.
#include <gtest/gtest.h>

#include <cctype>
#include <set>
#include <string>
#include <string_view>

#include "core/error.h"
#include "models/zoo/gpt.h"
#include "models/zoo/registry.h"
#include "ops/random.h"

namespace grove::zoo {
namespace {

TEST(Registry, ListsTheModelsWithUniqueNames) {
  const std::vector<std::string> names = model_names();
  // The reference models first, in this order (help texts and benchmarks list them so).
  ASSERT_GE(names.size(), 4u);
  EXPECT_EQ(std::vector<std::string>(names.begin(), names.begin() + 4),
            (std::vector<std::string>{"mlp", "cnn", "gpt", "resnet"}));
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
  EXPECT_EQ(names.size(), model_specs().size());
  EXPECT_NE(find_model(kDefaultModel), nullptr);
}

TEST(Registry, EverySpecIsComplete) {
  for (const ModelSpec& spec : model_specs()) {
    SCOPED_TRACE(spec.name == nullptr ? "(no name)" : spec.name);
    ASSERT_NE(spec.name, nullptr);
    const std::string_view name = spec.name;
    // A name is a --model value and a checkpoint's "grove.model": lower case, no spaces.
    ASSERT_FALSE(name.empty());
    for (const char c : name) EXPECT_TRUE(std::islower(c) || std::isdigit(c) || c == '_') << c;
    ASSERT_NE(spec.summary, nullptr);
    EXPECT_FALSE(std::string_view(spec.summary).empty());
    ASSERT_NE(spec.make, nullptr);
    EXPECT_EQ(&model_spec(name), &spec);
    EXPECT_EQ(&spec.task_spec(), &task_spec(spec.task));

    const TrainDefaults& defaults = spec.defaults;
    ASSERT_NE(defaults.optimizer, nullptr);
    const std::string_view optimizer = defaults.optimizer;
    EXPECT_TRUE(optimizer == "sgd" || optimizer == "adamw") << optimizer;
    ASSERT_NE(defaults.schedule, nullptr);
    EXPECT_GT(defaults.lr, 0);
    EXPECT_TRUE(defaults.momentum >= 0 && defaults.momentum < 1);
    EXPECT_GE(defaults.weight_decay, 0);
    EXPECT_GE(defaults.warmup_steps, 0);
    EXPECT_GE(defaults.batch_size, 1);
    EXPECT_GE(defaults.epochs, 1);
    // A task that counts steps needs a length in steps; one that counts epochs has no limit.
    if (spec.task_spec().trains_in_epochs) {
      EXPECT_EQ(defaults.steps, 0);
    } else {
      EXPECT_GE(defaults.steps, 1);
    }

    // Language models say how long a window is (the trainer draws windows of that length);
    // classifiers have no context. Sampling needs a language model.
    const auto model = spec.make();
    switch (spec.task) {
      case TaskKind::ImageClassification:
        EXPECT_EQ(spec.context_length, nullptr);
        EXPECT_FALSE(spec.can_sample());
        break;
      case TaskKind::LanguageModel:
        ASSERT_NE(spec.context_length, nullptr);
        EXPECT_GE(spec.context_length(*model), 1);
        break;
    }
  }
}

TEST(Registry, LookupsAreExactAndUnknownNamesListTheModels) {
  EXPECT_EQ(find_model("mlp"), &model_spec("mlp"));
  EXPECT_EQ(find_model("MLP"), nullptr);
  EXPECT_EQ(find_model("ml"), nullptr);
  EXPECT_EQ(find_model(""), nullptr);
  try {
    model_spec("vgg");
    FAIL() << "expected an error";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("model: expected mlp, cnn, gpt"), std::string::npos) << message;
    EXPECT_NE(message.find("got 'vgg'"), std::string::npos) << message;
  }
  EXPECT_EQ(join_names({"a", "b", "c"}), "a, b or c");
  EXPECT_EQ(join_names({"a"}), "a");
  EXPECT_EQ(join_names({}), "");
  EXPECT_EQ(join_names({"a", "b", "c"}, " | ", " | "), "a | b | c");
}

TEST(Registry, TasksFixDataLengthAndMetrics) {
  const TaskSpec& classification = task_spec(TaskKind::ImageClassification);
  EXPECT_EQ(classification.data, DataKind::FashionMnist);
  EXPECT_TRUE(classification.trains_in_epochs);
  ASSERT_EQ(classification.metrics.size(), 2u);
  EXPECT_STREQ(metric_name(classification.metrics[0]), "test_accuracy");
  EXPECT_STREQ(metric_name(classification.metrics[1]), "test_loss");

  const TaskSpec& language_model = task_spec(TaskKind::LanguageModel);
  EXPECT_EQ(language_model.data, DataKind::TextCorpus);
  EXPECT_FALSE(language_model.trains_in_epochs);
  ASSERT_EQ(language_model.metrics.size(), 1u);
  EXPECT_STREQ(metric_name(language_model.metrics[0]), "val_loss");
  EXPECT_STREQ(metric_label(Metric::ValLoss), "val loss");

  EXPECT_EQ(model_spec("gpt").task, TaskKind::LanguageModel);
  EXPECT_TRUE(model_spec("gpt").can_sample());
  EXPECT_EQ(model_spec("resnet").task, TaskKind::ImageClassification);
}

// The spec's functions reach the model: the gpt's context is its block, and generate appends
// the tokens asked for.
TEST(Registry, LanguageModelFunctionsReachTheModel) {
  const ModelSpec& spec = model_spec("gpt");
  manual_seed(51);
  const auto model = spec.make();
  EXPECT_EQ(spec.context_length(*model), 64);
  Generator generator(1);
  const Tensor prompt = from_vector<std::int64_t>({1, 2}, {1, 2});
  const Tensor text = spec.generate(*model, prompt, 3, 1.0, generator);
  EXPECT_EQ(text.sizes(), IntArrayRef({1, 5}));
}

// A configurable model has all three hooks; its options shape the model (a preset, then each
// size given), an empty set is the reference model, and bad options are errors naming them.
TEST(Registry, ModelOptionsShapeTheConfigurableModels) {
  for (const ModelSpec& spec : model_specs()) {
    const bool configurable = spec.make_configured != nullptr;
    EXPECT_EQ(spec.check_options != nullptr, configurable) << spec.name;
    EXPECT_EQ(spec.preset_help != nullptr, configurable) << spec.name;
  }
  const auto count = [](const nn::Module& model) {
    std::int64_t total = 0;
    for (const Tensor& p : model.parameters()) total += p.numel();
    return total;
  };
  const ModelSpec& gpt = model_spec("gpt");
  manual_seed(52);
  EXPECT_EQ(count(*make_model(gpt, ModelOptions{})), 834304);
  EXPECT_EQ(count(*make_model(gpt, ModelOptions{.preset = "tiny"})), 834304);
  // tiny with 1 block of 2 heads, 32 wide, context 16, tied: tok 128 x 32, pos 16 x 32, one
  // block (2 norms of 64, qkv 32 x 96 + 96, proj 32 x 32 + 32, fc 32 x 128 + 128, fc_proj
  // 128 x 32 + 32), ln_f 64, no head.
  ModelOptions small;
  small.layers = 1;
  small.heads = 2;
  small.embd = 32;
  small.block = 16;
  small.tie_weights = 1;
  const auto model = make_model(gpt, small);
  EXPECT_EQ(count(*model), 4096 + 512 + (128 + 3168 + 1056 + 4224 + 4128) + 64);
  EXPECT_EQ(gpt.context_length(*model), 16);
  EXPECT_EQ(small.describe(), "layers=1 heads=2 embd=32 block=16 tie_weights=1");
  EXPECT_TRUE(ModelOptions{}.empty());
  EXPECT_FALSE(small.empty());
  const GptConfig& gpt2s = gpt_preset("gpt2s");
  EXPECT_EQ(gpt2s.vocab, 50304);
  EXPECT_EQ(gpt2s.block, 1024);
  EXPECT_TRUE(gpt2s.tie_weights);
  EXPECT_THROW(make_model(model_spec("mlp"), small), Error);
  EXPECT_NO_THROW(check_model_options(model_spec("mlp"), ModelOptions{}));
  EXPECT_THROW(check_model_options(gpt, ModelOptions{.preset = "huge"}), Error);
  ModelOptions three_heads;
  three_heads.heads = 3;  // 128 % 3 != 0
  EXPECT_THROW(check_model_options(gpt, three_heads), Error);
  ModelOptions all_dropped;
  all_dropped.dropout = 1.0;
  EXPECT_THROW(check_model_options(gpt, all_dropped), Error);
}

}  // namespace
}  // namespace grove::zoo
