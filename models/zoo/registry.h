// The model registry: every model grove trains, one ModelSpec each, in one visible table
// (model_specs() in registry.cpp; no static registration). A spec holds every fact the rest of
// grove keys on a model's name for: the name itself (`--model`, a checkpoint's "grove.model"),
// how to build the model, its task (TaskKind, which fixes its data, loss, evaluation, metrics and
// whether a run counts epochs or steps: task_spec()), its reference training settings
// (TrainDefaults, the table train::defaults_for copies), and for a language model how to read
// its context length and sample text. Training, evaluation, the program and the tests branch on
// the task or call the spec's functions; none compares model names.
//
// Adding a model (how resnet was added):
//   1. models/zoo/<name>.h/.cpp: the nn::Module (built on the CPU; its header comment gives its
//      layers, shapes and parameter count), and <name>.cpp in SOURCES of models/zoo/CMakeLists.txt.
//   2. models/zoo/registry.cpp: #include its header and add its ModelSpec to the table in
//      model_specs(): name, summary, task, constructor, training defaults.
//   3. tests/models/zoo/<name>_test.cpp: what is particular to it (shapes, parameter count and
//      names). The tests that loop over model_specs() cover the rest with no edit: the spec is
//      complete (registry_test), output shapes and a few SGD steps lowering the loss (zoo_test),
//      the GPU's logits and training (cuda_zoo_test), graphed training equal to eager and a
//      checkpoint resumed exactly (models/train tests), and model_step_bench times its step.
// Then `grove train --model <name>` trains it with its defaults, and eval, checkpoints and the run
// summary follow its task. A model of a new task (other data, loss or evaluation) needs more: a
// TaskKind and its TaskSpec here, and the trainer's code for it (models/train: loading the data,
// the training loop, the evaluation).
//
// Contract: the table is built once, on first use (thread-safe), and never changes; specs and
// the names they point to live for the program's life. Lookups take a name; an unknown name is a
// grove::Error listing the registered names.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/rng.h"
#include "core/tensor.h"
#include "models/nn/module.h"

namespace grove::zoo {

// The model `grove train` trains when no --model is given.
inline constexpr const char* kDefaultModel = "mlp";

// What a model learns. The trainer, the evaluation and the program branch on this.
enum class TaskKind : std::uint8_t {
  // Fashion-MNIST images (B, 1, 28, 28) float -> logits (B, 10); cross entropy against the labels.
  ImageClassification,
  // Token ids (B, T) of the text corpus -> logits (B, T, vocab); cross entropy at every position.
  LanguageModel,
};

enum class DataKind : std::uint8_t {
  FashionMnist,  // models/data/fashion_mnist.h: a directory of the IDX files
  TextCorpus,    // models/data/text_corpus.h: text files, 128 byte tokens
};

// An evaluation's figures, as `grove eval --json` and the run summary name them.
enum class Metric : std::uint8_t {
  TestAccuracy,  // the fraction of the test images classified right
  TestLoss,      // the mean loss over the test images
  ValLoss,       // the mean loss over the fixed validation windows
};
const char* metric_name(Metric metric);   // "test_accuracy", "test_loss", "val_loss"
const char* metric_label(Metric metric);  // "test accuracy", "test loss", "val loss"

// What a task fixes for every model of that task.
struct TaskSpec {
  TaskKind kind;
  DataKind data;
  const char* data_help;  // what --data names for it ("a text file")
  // true: a run is `epochs` passes over the training set (cut short after `steps` steps when
  // steps > 0), evaluated after every epoch. false: a run is `steps` steps on randomly sampled
  // windows (there are no epochs), evaluated every `eval_every` steps and at the end.
  bool trains_in_epochs;
  // What an evaluation reports, in the order `grove eval --json` writes them; the first is the
  // one the run summary shows.
  std::span<const Metric> metrics;
};
const TaskSpec& task_spec(TaskKind kind);

// A model's reference training settings: what train::defaults_for puts in a TrainConfig.
struct TrainDefaults {
  const char* optimizer = "sgd";  // sgd | adamw
  double lr = 0.1;
  double momentum = 0.9;  // sgd
  double weight_decay = 0.0;
  const char* schedule = "cosine";
  std::int64_t warmup_steps = 0;
  std::int64_t batch_size = 128;
  // The run's length: epochs when the task trains in epochs (steps 0: no limit), else steps.
  std::int64_t epochs = 1;
  std::int64_t steps = 0;
};

// The shape of a configurable model (gpt), as `grove train` sets it: a preset, then each size
// given here in place of the preset's (0, or -1 for dropout and tie_weights, keeps the preset's).
// Empty: the model's reference shape. Checkpoints keep it (in their config), so eval, sample and
// --resume rebuild the same model.
struct ModelOptions {
  std::string preset;  // "" = the model's default preset
  std::int64_t layers = 0, heads = 0, embd = 0, block = 0;
  double dropout = -1.0;
  std::int64_t tie_weights = -1;  // 0 or 1

  bool empty() const;
  // The options given, for messages and the run header: "preset=char layers=2" ("" if empty).
  std::string describe() const;
  bool operator==(const ModelOptions&) const = default;
};

struct ModelSpec {
  const char* name = nullptr;     // lower case, unique: --model, "grove.model" in checkpoints
  const char* summary = nullptr;  // one line, for --help
  TaskKind task = TaskKind::ImageClassification;
  // A new model on the CPU, initialised from the CPU default generator (seed it first).
  std::shared_ptr<nn::Module> (*make)() = nullptr;
  // Configurable models only (nullptr otherwise): a new model of the shape `options` give, as
  // `make`; a bad option is an error naming it. Its presets' names and summaries, for --help.
  std::shared_ptr<nn::Module> (*make_configured)(const ModelOptions& options) = nullptr;
  void (*check_options)(const ModelOptions& options) = nullptr;  // make_configured's checks
  std::vector<std::string> (*preset_help)() = nullptr;
  TrainDefaults defaults;
  // Language models (nullptr otherwise): the longest window the model takes (its T), and
  // sampling: `tokens` tokens appended to `prompt` ((1, T0) int64 on the model's device),
  // returning the whole sequence (1, T0 + tokens); as zoo::Gpt::generate.
  std::int64_t (*context_length)(const nn::Module& model) = nullptr;
  std::int64_t (*vocab_size)(const nn::Module& model) = nullptr;  // the token ids it takes
  Tensor (*generate)(nn::Module& model, const Tensor& prompt, std::int64_t tokens,
                     double temperature, Generator& generator) = nullptr;

  const TaskSpec& task_spec() const { return zoo::task_spec(task); }
  bool can_sample() const { return generate != nullptr; }
};

// Every registered model, in the table's order (mlp, cnn, gpt, then the models added after).
std::span<const ModelSpec> model_specs();
// The spec of `name`, or nullptr when none has that name.
const ModelSpec* find_model(std::string_view name);
// The spec of `name`; an unknown name is an error listing the registered names.
const ModelSpec& model_spec(std::string_view name);
// The registered names, in the table's order, and as text: "mlp, cnn, gpt or resnet".
std::vector<std::string> model_names();
std::string model_names_text();
// "a, b or c": `separator` between the names, `last` before the last one; for messages and help
// texts that list names.
std::string join_names(const std::vector<std::string>& names, std::string_view separator = ", ",
                       std::string_view last = " or ");

// A new model of `name` on the CPU (model_spec(name).make()).
std::shared_ptr<nn::Module> make_model(std::string_view name);
// A new model of `spec` shaped by `options` (spec.make() when they are empty); options for a
// model that takes none are an error naming the configurable models.
std::shared_ptr<nn::Module> make_model(const ModelSpec& spec, const ModelOptions& options);
// make_model's checks of `options` alone, without building anything (TrainConfig::validate).
void check_model_options(const ModelSpec& spec, const ModelOptions& options);

}  // namespace grove::zoo
