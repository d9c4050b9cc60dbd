// TrainConfig's defaults per model (copied from the model registry) and its checks. The checks
// are about values alone (ranges, names); whether the data holds enough samples for a batch is
// the Trainer's to check, when it has loaded them.
#include "models/train/config.h"

#include <cmath>

#include "core/error.h"

namespace grove::train {

const char* to_string(Mode mode) {
  return mode == Mode::Eager ? "eager" : "graphed";
}

Mode parse_mode(const std::string& text) {
  if (text == "eager") return Mode::Eager;
  if (text == "graphed") return Mode::Graphed;
  GROVE_CHECK(false, "mode: expected eager or graphed, got '", text, "'");
  return Mode::Eager;
}

const char* to_string(Precision precision) {
  switch (precision) {
    case Precision::Float32:
      return "fp32";
    case Precision::BFloat16:
      return "bf16";
    case Precision::Float16:
      return "fp16";
  }
  return "fp32";
}

Precision parse_precision(const std::string& text) {
  if (text == "fp32") return Precision::Float32;
  if (text == "bf16") return Precision::BFloat16;
  if (text == "fp16") return Precision::Float16;
  GROVE_CHECK(false, "precision: expected fp32, bf16 or fp16, got '", text, "'");
  return Precision::Float32;
}

std::optional<DType> autocast_dtype(Precision precision) {
  switch (precision) {
    case Precision::Float32:
      return std::nullopt;
    case Precision::BFloat16:
      return DType::BFloat16;
    case Precision::Float16:
      return DType::Float16;
  }
  return std::nullopt;
}

TrainConfig defaults_for(const std::string& model) {
  const zoo::TrainDefaults& defaults = zoo::model_spec(model).defaults;
  TrainConfig config;
  config.model = model;
  config.optimizer = defaults.optimizer;
  config.lr = defaults.lr;
  config.momentum = defaults.momentum;
  config.weight_decay = defaults.weight_decay;
  config.schedule = defaults.schedule;
  config.warmup_steps = defaults.warmup_steps;
  config.batch_size = defaults.batch_size;
  config.epochs = defaults.epochs;
  config.steps = defaults.steps;
  return config;
}

std::int64_t TrainConfig::total_steps(std::int64_t batches_per_epoch) const {
  if (!zoo::model_spec(model).task_spec().trains_in_epochs) return steps;
  const std::int64_t all = epochs * batches_per_epoch;
  return steps > 0 && steps < all ? steps : all;
}

void TrainConfig::validate() const {
  const zoo::ModelSpec* spec = zoo::find_model(model);
  GROVE_CHECK(spec != nullptr, "model: expected ", zoo::model_names_text(), ", got '", model, "'");
  zoo::check_model_options(*spec, model_options);
  GROVE_CHECK(optimizer == "sgd" || optimizer == "adamw", "optimizer: expected sgd or adamw, got '",
              optimizer, "'");
  GROVE_CHECK(schedule == "constant" || schedule == "cosine" || schedule == "step",
              "schedule: expected constant, cosine or step, got '", schedule, "'");
  GROVE_CHECK(epochs >= 1 && epochs <= 1'000'000, "epochs: expected 1 to 1,000,000, got ", epochs);
  GROVE_CHECK(steps >= 0, "steps: expected 0 (no limit) or more, got ", steps);
  GROVE_CHECK(spec->task_spec().trains_in_epochs || steps >= 1, "steps: ", model,
              " trains for a number of steps (windows are sampled, there are no epochs); expected "
              "at least 1, got ",
              steps);
  GROVE_CHECK(batch_size >= 1, "batch size: expected at least 1, got ", batch_size);
  GROVE_CHECK(std::isfinite(lr) && lr > 0, "lr: expected a finite rate > 0, got ", lr);
  GROVE_CHECK(momentum >= 0 && momentum < 1, "momentum: expected 0 <= momentum < 1, got ",
              momentum);
  GROVE_CHECK(weight_decay >= 0, "weight decay: expected >= 0, got ", weight_decay);
  GROVE_CHECK(warmup_steps >= 0, "warm-up steps: expected >= 0, got ", warmup_steps);
  GROVE_CHECK(step_size >= 1, "step size: expected at least 1, got ", step_size);
  GROVE_CHECK(gamma > 0 && gamma <= 1, "gamma: expected 0 < gamma <= 1, got ", gamma);
  GROVE_CHECK(clip_grad_norm >= 0, "gradient clipping: expected a norm >= 0 (0: off), got ",
              clip_grad_norm);
  GROVE_CHECK(train_limit >= 0 && test_limit >= 0, "sample limits: expected >= 0 (0: all), got ",
              train_limit, " and ", test_limit);
  GROVE_CHECK(eval_batches >= 1, "eval batches: expected at least 1, got ", eval_batches);
  GROVE_CHECK(eval_every >= 1, "eval every: expected at least 1 step, got ", eval_every);
  GROVE_CHECK(sample_tokens >= 0, "sample tokens: expected >= 0, got ", sample_tokens);
  GROVE_CHECK(temperature >= 0, "temperature: expected >= 0 (0: the likeliest token), got ",
              temperature);
  GROVE_CHECK(read_every >= 0, "read every: expected >= 0 (0: automatic), got ", read_every);
}

}  // namespace grove::train
