// The effective configuration of a `grove train` run, written beside its checkpoint as a file
// that `grove train --config` reads back: runs/gpt.safetensors -> runs/gpt.toml,
//
//   # grove train's effective configuration of runs/gpt.safetensors; run it again with
//   #   grove train --config runs/gpt.toml
//   [train]
//   model = "gpt"
//   steps = 2000
//   lr = 0.0003
//   ...
//
// one line per setting that has a flag (the model's defaults included, so the file stands on its
// own), numbers in their shortest form that reads back exactly, strings quoted as TOML wants.
// Settings without a flag (eval_batches, ...) are the defaults either way and are left out.
#pragma once

#include <filesystem>
#include <string>

#include "models/train/config.h"

namespace grove::program {

// The file beside `checkpoint`: its name with the extension replaced by ".toml".
std::filesystem::path config_file_beside(const std::filesystem::path& checkpoint);

// The file's text for `config` (what write_config_file writes).
std::string config_file_text(const train::TrainConfig& config,
                             const std::filesystem::path& checkpoint);

// Writes config_file_text to config_file_beside(checkpoint), replacing it whole (an atomic
// rename: never half-written). Throws grove::Error when the folder cannot be written.
void write_config_file(const std::filesystem::path& checkpoint, const train::TrainConfig& config);

}  // namespace grove::program
