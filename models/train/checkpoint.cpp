// Checkpoints of a run: what goes in the file and how it comes back. See
// models/train/checkpoint.h; the file format and atomic writes are models/checkpoint's.
#include "models/train/checkpoint.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "models/checkpoint/layout.h"
#include "models/checkpoint/safetensors.h"

namespace grove::train {
namespace {

using nlohmann::json;
constexpr std::string_view kOptimizerPrefix = "optimizer.";

template <typename T>
void read_field(const json& object, const char* name, T& field) {
  GROVE_CHECK(object.contains(name), "checkpoint: the run's config has no '", name,
              "'; the file was not written by this version of grove");
  try {
    field = object.at(name).get<T>();
  } catch (const json::exception& error) {
    GROVE_CHECK(false, "checkpoint: the config's '", name, "' has the wrong type (", error.what(),
                ")");
  }
}

std::string metadata_entry(const checkpoint::SafetensorsFile& file,
                           const std::filesystem::path& path, const std::string& key) {
  const auto found = file.metadata.find(key);
  GROVE_CHECK(found != file.metadata.end(), "checkpoint ", path.string(), ": no '", key,
              "' in its metadata; it is not a grove checkpoint (a file of weights only can be "
              "read with load_safetensors)");
  return found->second;
}

}  // namespace

std::string config_to_json(const TrainConfig& config) {
  const json object = {
      {"model", config.model},
      {"device", config.device.to_string()},
      {"mode", to_string(config.mode)},
      {"epochs", config.epochs},
      {"steps", config.steps},
      {"batch_size", config.batch_size},
      {"optimizer", config.optimizer},
      {"lr", config.lr},
      {"momentum", config.momentum},
      {"weight_decay", config.weight_decay},
      {"schedule", config.schedule},
      {"warmup_steps", config.warmup_steps},
      {"step_size", config.step_size},
      {"gamma", config.gamma},
      {"clip_grad_norm", config.clip_grad_norm},
      {"seed", config.seed},
      {"data", config.data},
      {"train_limit", config.train_limit},
      {"test_limit", config.test_limit},
      {"eval_batches", config.eval_batches},
      {"eval_every", config.eval_every},
      {"sample_tokens", config.sample_tokens},
      {"temperature", config.temperature},
  };
  return object.dump();
}

TrainConfig config_from_json(const std::string& text) {
  json object;
  try {
    object = json::parse(text);
  } catch (const json::exception& error) {
    GROVE_CHECK(false, "checkpoint: the run's config is not JSON (", error.what(), ")");
  }
  GROVE_CHECK(object.is_object(), "checkpoint: the run's config is not a JSON object");
  TrainConfig config;
  std::string device, mode;
  read_field(object, "model", config.model);
  read_field(object, "device", device);
  read_field(object, "mode", mode);
  config.device = Device::parse(device);
  config.mode = parse_mode(mode);
  read_field(object, "epochs", config.epochs);
  read_field(object, "steps", config.steps);
  read_field(object, "batch_size", config.batch_size);
  read_field(object, "optimizer", config.optimizer);
  read_field(object, "lr", config.lr);
  read_field(object, "momentum", config.momentum);
  read_field(object, "weight_decay", config.weight_decay);
  read_field(object, "schedule", config.schedule);
  read_field(object, "warmup_steps", config.warmup_steps);
  read_field(object, "step_size", config.step_size);
  read_field(object, "gamma", config.gamma);
  read_field(object, "clip_grad_norm", config.clip_grad_norm);
  read_field(object, "seed", config.seed);
  read_field(object, "data", config.data);
  read_field(object, "train_limit", config.train_limit);
  read_field(object, "test_limit", config.test_limit);
  read_field(object, "eval_batches", config.eval_batches);
  read_field(object, "eval_every", config.eval_every);
  read_field(object, "sample_tokens", config.sample_tokens);
  read_field(object, "temperature", config.temperature);
  config.validate();
  return config;
}

void save_checkpoint(Trainer& trainer, const std::filesystem::path& path) {
  std::vector<std::pair<std::string, Tensor>> tensors = trainer.model().state_dict();
  for (const auto& [name, tensor] : trainer.optimizer().state()) {
    tensors.emplace_back(std::string(kOptimizerPrefix) + name, tensor);
  }
  const RunPosition position = trainer.position();
  const json position_json = {
      {"steps_done", position.steps_done}, {"epoch", position.epoch},
      {"next_batch", position.next_batch}, {"window_offset", position.window_offset},
      {"rng_seed", position.rng_seed},     {"rng_offset", position.rng_offset}};
  const std::map<std::string, std::string> metadata = {
      {"grove.format", kCheckpointFormat},
      {"grove.model", trainer.config().model},
      {"grove.config", config_to_json(trainer.config())},
      {"grove.position", position_json.dump()},
  };
  checkpoint::save_safetensors(path, tensors, metadata);
}

Checkpoint read_checkpoint(const std::filesystem::path& path) {
  checkpoint::SafetensorsFile file = checkpoint::load_safetensors(path);
  const std::string format = metadata_entry(file, path, "grove.format");
  GROVE_CHECK(format == kCheckpointFormat, "checkpoint ", path.string(), ": format '", format,
              "', expected '", kCheckpointFormat, "'; it was written by another version of grove");
  Checkpoint checkpoint;
  checkpoint.config = config_from_json(metadata_entry(file, path, "grove.config"));
  GROVE_CHECK(checkpoint.config.model == metadata_entry(file, path, "grove.model"), "checkpoint ",
              path.string(), ": its model and its config disagree");
  try {
    const json position = json::parse(metadata_entry(file, path, "grove.position"));
    checkpoint.position.steps_done = position.at("steps_done").get<std::int64_t>();
    checkpoint.position.epoch = position.at("epoch").get<std::int64_t>();
    checkpoint.position.next_batch = position.at("next_batch").get<std::int64_t>();
    checkpoint.position.window_offset = position.at("window_offset").get<std::uint64_t>();
    checkpoint.position.rng_seed = position.at("rng_seed").get<std::uint64_t>();
    checkpoint.position.rng_offset = position.at("rng_offset").get<std::uint64_t>();
  } catch (const json::exception& error) {
    GROVE_CHECK(false, "checkpoint ", path.string(), ": its position is malformed (", error.what(),
                ")");
  }
  for (auto& [name, tensor] : file.tensors) {
    if (name.rfind(kOptimizerPrefix, 0) == 0) {
      checkpoint.optimizer.emplace_back(name.substr(kOptimizerPrefix.size()), std::move(tensor));
    } else {
      checkpoint.model.emplace_back(name, std::move(tensor));
    }
  }
  return checkpoint;
}

void restore_checkpoint(Trainer& trainer, const Checkpoint& checkpoint, bool restore_position) {
  const TrainConfig& config = trainer.config();
  GROVE_CHECK(checkpoint.config.model == config.model, "checkpoint: it holds a '",
              checkpoint.config.model, "' model, but this run trains '", config.model,
              "'; pass --model ", checkpoint.config.model, " or another checkpoint");
  GROVE_CHECK(checkpoint.config.optimizer == config.optimizer, "checkpoint: its optimizer is ",
              checkpoint.config.optimizer, ", this run's is ", config.optimizer);
  checkpoint::check_same_layout(trainer.model().state_dict(), checkpoint.model,
                                "the checkpoint's model weights");
  // Everything is checked before anything is copied: the position, then the optimizer's state
  // (load_state checks every entry first), then the weights (their layout was checked above).
  if (restore_position) trainer.check_position(checkpoint.position);
  trainer.optimizer().load_state(checkpoint.optimizer);
  trainer.model().load_state_dict(checkpoint.model);
  if (restore_position) trainer.resume_at(checkpoint.position);
}

}  // namespace grove::train
