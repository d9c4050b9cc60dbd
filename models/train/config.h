// What a training run is: the model, where and how it runs, the optimizer and its schedule, the
// data, and how long. Each model's defaults (its reference settings) are in its spec in the
// model registry (zoo::ModelSpec::defaults, models/zoo/registry.cpp); defaults_for copies them.
// What differs between models beyond the defaults follows the model's task
// (zoo::TaskSpec: image classifiers count epochs over Fashion-MNIST, language models count steps
// over windows of the text corpus).
//
// A config is plain data: validate() says what is wrong with one (every message names the field,
// the value and what is allowed), so the program can refuse bad flags before it loads anything.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/device.h"
#include "core/dtype.h"
#include "graphs/explain.h"
#include "models/zoo/registry.h"

namespace grove::train {

// Eager: every op runs as it is called. Graphed: the whole step (forward, backward, clipping,
// the optimizer's update) is one compiled function, replayed as one graph per step.
enum class Mode : std::uint8_t { Eager, Graphed };
const char* to_string(Mode mode);
Mode parse_mode(const std::string& text);  // "eager" | "graphed"; anything else: an error

// The dtype the step computes in. Float32: every op in float32. BFloat16 and Float16: the
// forward and the loss run under an AutocastGuard of that dtype (Note [Autocast] in
// ops/autocast.h: matrix products in 16 bits, normalisations, softmax and the loss in float32),
// while parameters, gradients and optimizer state stay float32 (the master state).
enum class Precision : std::uint8_t { Float32, BFloat16, Float16 };
const char* to_string(Precision precision);  // "fp32" | "bf16" | "fp16"
Precision parse_precision(const std::string& text);
// The AutocastGuard's dtype for a precision; nullopt for float32.
std::optional<DType> autocast_dtype(Precision precision);

struct TrainConfig {
  std::string model = zoo::kDefaultModel;  // a registered name (zoo::model_specs())
  zoo::ModelOptions model_options;         // a configurable model's shape (empty: its default)
  Device device = kCPU;
  Mode mode = Mode::Eager;
  Precision precision = Precision::Float32;

  // Length: image classifiers run `epochs` passes over the training set, cut short after
  // `steps` steps when steps > 0; language models run `steps` steps (epochs are not defined for
  // sampled windows). See zoo::TaskSpec::trains_in_epochs.
  std::int64_t epochs = 5;
  std::int64_t steps = 0;
  std::int64_t batch_size = 128;

  std::string optimizer = "sgd";  // sgd | adamw
  double lr = 0.1;
  double momentum = 0.9;            // sgd
  double weight_decay = 0.0;        // sgd: L2 added to the gradient; adamw: decoupled
  std::string schedule = "cosine";  // constant | cosine (linear warm-up, then cosine) | step
  std::int64_t warmup_steps = 0;    // cosine; cut to the run's length
  std::int64_t step_size = 1000;    // step: lr *= gamma every step_size steps
  double gamma = 0.1;               // step
  double clip_grad_norm = 0.0;      // > 0: scale gradients to this global L2 norm at most

  std::uint64_t seed = 0;  // model initialisation, data order, windows and samples
  // Image classifiers: the Fashion-MNIST directory; language models: a text file. Empty: the
  // default (data::default_fashion_mnist_dir(), data::default_corpus_paths()).
  std::string data;
  std::int64_t train_limit = 0;  // > 0: the first N training samples only (quick runs, tests)
  std::int64_t test_limit = 0;   // > 0: the first N test samples only

  // Language models: validation loss over this many batches of windows (the same windows every
  // time), and a sample of this many characters after each evaluation (0: none).
  std::int64_t eval_batches = 8;
  std::int64_t eval_every = 500;  // language models: steps between evaluations (else each epoch)
  std::int64_t sample_tokens = 200;
  double temperature = 0.8;

  // Steps between host reads of the losses (one synchronisation per this many steps on a
  // GPU; the callbacks then see those steps). 1 on the CPU, where reading costs nothing.
  std::int64_t read_every = 0;  // 0: 1 on the CPU, 50 on a GPU

  graphs::ExplainLevel explain = graphs::ExplainLevel::Off;

  // The steps a run takes (for schedules and progress): steps, or epochs * batches_per_epoch.
  std::int64_t total_steps(std::int64_t batches_per_epoch) const;
  // Throws a grove::Error naming the first field that is out of range.
  void validate() const;
};

// The reference settings for `model` (its zoo::ModelSpec::defaults); an unknown model is an
// error listing the registered ones.
TrainConfig defaults_for(const std::string& model);

}  // namespace grove::train
