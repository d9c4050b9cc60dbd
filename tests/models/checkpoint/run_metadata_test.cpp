// A run checkpoint's metadata (models/train/checkpoint.h) refuses values that are not what grove
// writes: numbers of the wrong kind for a config or position field (a float or an out-of-range
// integer where an integer belongs), which nlohmann-json would otherwise convert with an
// undefined cast. Found by tests/fuzz/checkpoint_fuzz.cpp; its inputs are replayed there too.
//
// What it is not: the round trips and resumes of whole runs (tests/models/train/checkpoint_test).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "models/checkpoint/safetensors.h"
#include "models/train/checkpoint.h"
#include "tests/models/checkpoint/checkpoint_test_util.h"

namespace grove::train {
namespace {

using checkpoint::testing::error_of;
using checkpoint::testing::TempDir;
using nlohmann::json;

#define EXPECT_MESSAGE_HAS(message, text) \
  EXPECT_NE((message).find(text), std::string::npos) << "message: " << (message)

// The config grove writes for an mlp run, with `field` replaced by `value`.
std::string config_with(const char* field, const json& value) {
  json config = json::parse(config_to_json(defaults_for("mlp")));
  config[field] = value;
  return config.dump();
}

TEST(RunMetadata, ConfigIntegersMustBeIntegersInRange) {
  EXPECT_EQ(config_from_json(config_with("epochs", 3)).epochs, 3);
  const std::string huge = error_of([] { config_from_json(config_with("epochs", 1e300)); });
  EXPECT_MESSAGE_HAS(huge, "'epochs' is 1e+300, expected an integer from -2^63 to 2^63 - 1");
  const std::string fraction = error_of([] { config_from_json(config_with("batch_size", 2.5)); });
  EXPECT_MESSAGE_HAS(fraction, "'batch_size' is 2.5, expected an integer");
  const std::string too_big =
      error_of([] { config_from_json(config_with("steps", 9223372036854775808ull)); });
  EXPECT_MESSAGE_HAS(too_big, "'steps' is 9223372036854775808, expected an integer");
  const std::string negative_seed = error_of([] { config_from_json(config_with("seed", -1)); });
  EXPECT_MESSAGE_HAS(negative_seed, "'seed' is -1, expected an integer from 0 to 2^64 - 1");
  const std::string text_lr = error_of([] { config_from_json(config_with("lr", "0.1")); });
  EXPECT_MESSAGE_HAS(text_lr, "'lr' is \"0.1\", expected a number");
  // A double field takes an integer as well (JSON has one kind of number).
  EXPECT_EQ(config_from_json(config_with("lr", 1)).lr, 1.0);
}

TEST(RunMetadata, PositionIntegersMustBeIntegersInRange) {
  TempDir dir;
  const auto read_with_position = [&](const json& position) {
    const std::filesystem::path path = dir / "run.safetensors";
    const TrainConfig config = defaults_for("mlp");
    checkpoint::save_safetensors(path, {{"w", from_vector<float>({1, 2})}},
                                 {{"grove.format", kCheckpointFormat},
                                  {"grove.model", config.model},
                                  {"grove.config", config_to_json(config)},
                                  {"grove.position", position.dump()}});
    return read_checkpoint(path);
  };
  json position = {{"steps_done", 10},   {"epoch", 1},    {"next_batch", 3},
                   {"window_offset", 0}, {"rng_seed", 5}, {"rng_offset", 8}};
  EXPECT_EQ(read_with_position(position).position.rng_seed, 5u);

  json huge = position;
  huge["steps_done"] = 1e300;
  EXPECT_MESSAGE_HAS(error_of([&] { read_with_position(huge); }),
                     "position's 'steps_done' is 1e+300, expected an integer");
  json negative = position;
  negative["rng_offset"] = -2.5;
  EXPECT_MESSAGE_HAS(error_of([&] { read_with_position(negative); }),
                     "'rng_offset' is -2.5, expected an integer from 0 to 2^64 - 1");
  EXPECT_MESSAGE_HAS(error_of([&] {
                       read_with_position(json::array({1, 2}));
                     }),
                     "its position is not a JSON object but array");
}

}  // namespace
}  // namespace grove::train
