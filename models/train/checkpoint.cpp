// Checkpoints of a run: what goes in the file and how it comes back. See
// models/train/checkpoint.h; the file format and atomic writes are models/checkpoint's.
#include "models/train/checkpoint.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <type_traits>

#include "core/error.h"
#include "models/checkpoint/layout.h"
#include "models/checkpoint/safetensors.h"

namespace grove::train {
namespace {

using nlohmann::json;
constexpr std::string_view kOptimizerPrefix = "optimizer.";

// Whether a JSON value can be read as T exactly. nlohmann's get<T>() would also convert a
// floating-point number to an integer type with a cast that is undefined when the number is out
// of range (1e300 as int64), and a negative integer to uint64 modulo 2^64; neither is a value
// grove wrote, so integers must be JSON integers within T's range.
template <typename T>
bool holds(const json& value) {
  if constexpr (std::is_same_v<T, std::string>) {
    return value.is_string();
  } else if constexpr (std::is_same_v<T, double>) {
    return value.is_number();
  } else if constexpr (std::is_same_v<T, std::uint64_t>) {
    return value.is_number_unsigned();
  } else {
    static_assert(std::is_same_v<T, std::int64_t>);
    return value.is_number_integer() &&
           (!value.is_number_unsigned() ||
            value.get<std::uint64_t>() <= static_cast<std::uint64_t>(INT64_MAX));
  }
}

template <typename T>
const char* kind_of() {
  if constexpr (std::is_same_v<T, std::string>) return "a string";
  if constexpr (std::is_same_v<T, double>) return "a number";
  if constexpr (std::is_same_v<T, std::uint64_t>) return "an integer from 0 to 2^64 - 1";
  return "an integer from -2^63 to 2^63 - 1";
}

// object[name] as T; `what` starts the errors ("checkpoint: the run's config").
template <typename T>
T read_value(const json& object, const char* name, const std::string& what) {
  const auto found = object.find(name);
  GROVE_CHECK(found != object.end(), what, " has no '", name,
              "'; the file was not written by this version of grove");
  GROVE_CHECK(holds<T>(*found), what, "'s '", name, "' is ", found->dump(), ", expected ",
              kind_of<T>(), "; the file is corrupt");
  return found->get<T>();
}

template <typename T>
void read_field(const json& object, const char* name, T& field) {
  field = read_value<T>(object, name, "checkpoint: the run's config");
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
      {"precision", to_string(config.precision)},
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
      {"model_options",
       {{"preset", config.model_options.preset},
        {"layers", config.model_options.layers},
        {"heads", config.model_options.heads},
        {"embd", config.model_options.embd},
        {"block", config.model_options.block},
        {"dropout", config.model_options.dropout},
        {"tie_weights", config.model_options.tie_weights}}},
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
  if (object.contains("precision")) {  // checkpoints from before precisions trained in fp32
    std::string precision;
    read_field(object, "precision", precision);
    config.precision = parse_precision(precision);
  }
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
  if (object.contains("model_options")) {  // checkpoints from before: the model's default shape
    const json& options = object["model_options"];
    GROVE_CHECK(options.is_object(), "checkpoint: the run's model_options is not a JSON object");
    zoo::ModelOptions& o = config.model_options;
    read_field(options, "preset", o.preset);
    read_field(options, "layers", o.layers);
    read_field(options, "heads", o.heads);
    read_field(options, "embd", o.embd);
    read_field(options, "block", o.block);
    read_field(options, "dropout", o.dropout);
    read_field(options, "tie_weights", o.tie_weights);
  }
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
  json position;
  try {
    position = json::parse(metadata_entry(file, path, "grove.position"));
  } catch (const json::exception& error) {
    GROVE_CHECK(false, "checkpoint ", path.string(), ": its position is not JSON (", error.what(),
                ")");
  }
  GROVE_CHECK(position.is_object(), "checkpoint ", path.string(),
              ": its position is not a JSON object but ", position.type_name());
  const std::string position_what = "checkpoint " + path.string() + ": the run's position";
  checkpoint.position.steps_done = read_value<std::int64_t>(position, "steps_done", position_what);
  checkpoint.position.epoch = read_value<std::int64_t>(position, "epoch", position_what);
  checkpoint.position.next_batch = read_value<std::int64_t>(position, "next_batch", position_what);
  checkpoint.position.window_offset =
      read_value<std::uint64_t>(position, "window_offset", position_what);
  checkpoint.position.rng_seed = read_value<std::uint64_t>(position, "rng_seed", position_what);
  checkpoint.position.rng_offset = read_value<std::uint64_t>(position, "rng_offset", position_what);
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
  GROVE_CHECK(checkpoint.config.model_options == config.model_options,
              "checkpoint: its model's shape is '", checkpoint.config.model_options.describe(),
              "', this run's is '", config.model_options.describe(),
              "'; give the checkpoint's --preset and size flags, or another checkpoint");
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
