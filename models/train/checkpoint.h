// Checkpoints of a training run, in the safetensors format (models/checkpoint/safetensors.h):
//
//   tensors   the model's parameters under their own names ("fc1.weight", "blocks.0.qkv.bias",
//             ...), so safetensors.torch.load_file gives PyTorch a state dict of the weights;
//             the optimizer's state under "optimizer.<name>" ("optimizer.lr",
//             "optimizer.step", "optimizer.velocity.0", ...)
//   metadata  "grove.format" (kCheckpointFormat), "grove.model", "grove.config" (the run's
//             TrainConfig as JSON), "grove.position" (RunPosition as JSON), and the file
//             layer's checksum of the data
//
// A run restored from a checkpoint goes on exactly as if it had not stopped (bit for bit on
// the CPU): the weights, the optimizer's state (velocity or moments, rate, step count), the
// step, the data order's place (seed, epoch, next batch), a language model's window sampler
// and the device's default random generator are all in the file, whatever the model (the
// schema has no per-model part: "grove.model" is the model registry's name, and a name that is
// not registered is refused with the config). Files are written atomically: killing the process
// at any moment leaves the previous checkpoint whole. A checkpoint of another model, of other
// shapes, of another format version, or a damaged file is refused with a message naming what
// does not match.
#pragma once

#include <filesystem>
#include <string>

#include "models/train/config.h"
#include "models/train/trainer.h"

namespace grove::train {

inline constexpr const char* kCheckpointFormat = "grove-checkpoint-1";

std::string config_to_json(const TrainConfig& config);
// Errors name the field that is missing or of the wrong type.
TrainConfig config_from_json(const std::string& json);

void save_checkpoint(Trainer& trainer, const std::filesystem::path& path);

struct Checkpoint {
  TrainConfig config;  // the run's settings when it was saved
  RunPosition position;
  std::vector<std::pair<std::string, Tensor>> model;      // CPU tensors, by parameter name
  std::vector<std::pair<std::string, Tensor>> optimizer;  // CPU tensors, by state name
};
// Reads and checks a checkpoint file (format, metadata, checksum); does not need a Trainer.
Checkpoint read_checkpoint(const std::filesystem::path& path);

// Puts a checkpoint's weights, optimizer state and (unless restore_position is false, as for
// evaluating on other data) position into `trainer`, which must train the same model with the
// same optimizer (shapes and names are checked, every mismatch named, before anything is
// copied). The run continues the saved one exactly when its length is unchanged: another
// --epochs or --steps also stretches a cosine or step schedule from the resumed step on.
void restore_checkpoint(Trainer& trainer, const Checkpoint& checkpoint,
                        bool restore_position = true);

}  // namespace grove::train
