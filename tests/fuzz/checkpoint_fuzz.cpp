// Fuzz target: a run's checkpoint metadata (models/train/checkpoint.h): read_checkpoint on a
// well-formed safetensors file whose "grove.*" metadata entries come from the input, so that the
// fuzzer spends its time in the format check, config_from_json and the position's parsing
// rather than in the file layer (safetensors_fuzz covers that).
//
// The input: up to four lines, the values of grove.format, grove.model, grove.config and
// grove.position in that order; a missing line leaves its key out. (JSON text needs no raw
// newline, so every config and position can be written.) The file holds two tensors, a weight
// and an optimizer entry. A checkpoint read without an error must hold a valid config and split
// its tensors into model and optimizer parts.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "models/train/checkpoint.h"
#include "tests/fuzz/fuzz_target.h"

namespace {

// The safetensors bytes of a file with the given metadata, tensor "fc.weight" (F32, [1]) and
// "optimizer.step" (I64, [1]).
std::string checkpoint_bytes(const nlohmann::json& metadata) {
  const nlohmann::json header = {
      {"__metadata__", metadata},
      {"optimizer.step", {{"dtype", "I64"}, {"shape", {1}}, {"data_offsets", {0, 8}}}},
      {"fc.weight", {{"dtype", "F32"}, {"shape", {1}}, {"data_offsets", {8, 12}}}}};
  // Invalid UTF-8 in a value becomes U+FFFD: the file layer's refusal of it is not the target.
  const std::string text = header.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string bytes(8, '\0');
  for (std::size_t i = 0; i < 8; ++i) bytes[i] = static_cast<char>(text.size() >> (8 * i));
  bytes += text;
  bytes += std::string("\x07\0\0\0\0\0\0\0", 8);  // step 7
  bytes += std::string("\0\0\x80\x3f", 4);        // 1.0f
  return bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const grove::fuzz::ScratchPath file("checkpoint");
  constexpr const char* kKeys[] = {"grove.format", "grove.model", "grove.config", "grove.position"};
  nlohmann::json metadata = nlohmann::json::object();
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  for (const char* key : kKeys) {
    if (rest.empty()) break;
    const std::size_t end = rest.find('\n');
    metadata[key] = std::string(rest.substr(0, end));
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
  }
  const std::string bytes = checkpoint_bytes(metadata);
  grove::fuzz::write_file(file.path(), reinterpret_cast<const std::uint8_t*>(bytes.data()),
                          bytes.size());
  grove::fuzz::expect_only_grove_errors([&] {
    const grove::train::Checkpoint checkpoint = grove::train::read_checkpoint(file.path());
    bool valid = true;  // read_checkpoint returns valid configs only
    try {
      checkpoint.config.validate();
    } catch (const grove::Error&) {
      valid = false;
    }
    FUZZ_CHECK(valid);
    FUZZ_CHECK(checkpoint.model.size() == 1 && checkpoint.model[0].first == "fc.weight");
    FUZZ_CHECK(checkpoint.optimizer.size() == 1 && checkpoint.optimizer[0].first == "step");
  });
  return 0;
}
