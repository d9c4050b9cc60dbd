// The reference models by name: make_model("mlp" | "cnn" | "gpt"), each built on the CPU with its
// default configuration (zoo::Mlp, zoo::Cnn, zoo::Gpt with GptConfig{}); move it with to().
// Not a registry users extend: the three models are the benchmark's.
#pragma once

#include <memory>
#include <string>

#include "models/nn/module.h"
#include "models/zoo/cnn.h"
#include "models/zoo/gpt.h"
#include "models/zoo/mlp.h"

namespace grove::zoo {

// A new model; an unknown name is an error listing the three names.
std::shared_ptr<nn::Module> make_model(const std::string& name);

}  // namespace grove::zoo
