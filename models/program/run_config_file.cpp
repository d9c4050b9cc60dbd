// See run_config_file.h.
#include "models/program/run_config_file.h"

#include <charconv>
#include <cstdio>
#include <sstream>
#include <system_error>

#include "core/error.h"
#include "models/checkpoint/atomic_file.h"
#include "models/zoo/registry.h"

namespace grove::program {
namespace {

// The shortest decimal form of `value` that reads back as the same double (std::to_chars, as
// the metrics file's numbers; general format, so 3e-4 is "0.0003").
std::string shortest(double value) {
  char text[32];
  const auto [end, error] =
      std::to_chars(text, text + sizeof(text), value, std::chars_format::general);
  GROVE_INTERNAL_ASSERT(error == std::errc(), "to_chars failed for a double");
  std::string result(text, end);
  // TOML tells floats from integers by a '.' or an exponent: 1 -> 1.0.
  if (result.find_first_of(".eEn") == std::string::npos) result += ".0";
  return result;
}

// A TOML basic string: quotes and backslashes escaped, control characters as \uXXXX.
std::string quoted(const std::string& text) {
  std::string result = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      result += '\\';
      result += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escape[8];
      std::snprintf(escape, sizeof(escape), "\\u%04x", static_cast<unsigned>(c));
      result += escape;
    } else {
      result += c;
    }
  }
  return result + "\"";
}

}  // namespace

std::filesystem::path config_file_beside(const std::filesystem::path& checkpoint) {
  std::filesystem::path path = checkpoint;
  return path.replace_extension(".toml");
}

std::string config_file_text(const train::TrainConfig& config,
                             const std::filesystem::path& checkpoint) {
  std::ostringstream out;
  out << "# grove train's effective configuration of " << checkpoint.string()
      << "; run it again with\n#   grove train --config " << config_file_beside(checkpoint).string()
      << "\n[train]\n";
  const auto line = [&](const char* key, const std::string& value) {
    out << key << " = " << value << "\n";
  };
  line("model", quoted(config.model));
  const zoo::ModelOptions& shape = config.model_options;
  if (!shape.preset.empty()) line("preset", quoted(shape.preset));
  if (shape.layers > 0) line("layers", std::to_string(shape.layers));
  if (shape.heads > 0) line("heads", std::to_string(shape.heads));
  if (shape.embd > 0) line("embd", std::to_string(shape.embd));
  if (shape.block > 0) line("block", std::to_string(shape.block));
  if (shape.dropout >= 0) line("dropout", shortest(shape.dropout));
  if (shape.tie_weights >= 0) line("tie-weights", shape.tie_weights == 1 ? "true" : "false");
  line("device", quoted(config.device.to_string()));
  line("mode", quoted(train::to_string(config.mode)));
  line("precision", quoted(train::to_string(config.precision)));
  // Language models take no --epochs (they run a number of steps).
  if (zoo::model_spec(config.model).task_spec().trains_in_epochs) {
    line("epochs", std::to_string(config.epochs));
  }
  line("steps", std::to_string(config.steps));
  line("batch-size", std::to_string(config.batch_size));
  line("optimizer", quoted(config.optimizer));
  line("lr", shortest(config.lr));
  line("momentum", shortest(config.momentum));
  line("weight-decay", shortest(config.weight_decay));
  line("schedule", quoted(config.schedule));
  line("warmup-steps", std::to_string(config.warmup_steps));
  line("clip-grad-norm", shortest(config.clip_grad_norm));
  line("seed", std::to_string(config.seed));
  if (!config.data.empty()) line("data", quoted(config.data));
  if (config.train_limit > 0) line("train-limit", std::to_string(config.train_limit));
  if (config.test_limit > 0) line("test-limit", std::to_string(config.test_limit));
  return out.str();
}

void write_config_file(const std::filesystem::path& checkpoint, const train::TrainConfig& config) {
  checkpoint::AtomicFileWriter file(config_file_beside(checkpoint));
  file.write(config_file_text(config, checkpoint));
  file.commit();
}

}  // namespace grove::program
