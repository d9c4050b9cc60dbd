// The configuration file written beside a checkpoint (models/program/run_config_file.h): its
// path, its keys (the flags' names), numbers that read back exactly and TOML-quoted strings.
#include "models/program/run_config_file.h"

#include <gtest/gtest.h>

#include <string>

namespace grove::program {
namespace {

TEST(RunConfigFile, SitsBesideTheCheckpointAndNamesEveryFlaggedSetting) {
  EXPECT_EQ(config_file_beside("runs/gpt.safetensors"), std::filesystem::path("runs/gpt.toml"));
  EXPECT_EQ(config_file_beside("plain"), std::filesystem::path("plain.toml"));

  train::TrainConfig config = train::defaults_for("gpt");
  config.lr = 3e-4;
  config.weight_decay = 0.1;
  config.data = "my \"corpus\"\\path.txt";
  config.model_options.preset = "char";
  config.model_options.tie_weights = 1;
  const std::string text = config_file_text(config, "runs/gpt.safetensors");
  EXPECT_EQ(text.rfind("# grove train's effective configuration of runs/gpt.safetensors", 0), 0u);
  for (const char* expected :
       {"\n[train]\n", "\nmodel = \"gpt\"\n", "\npreset = \"char\"\n", "\ntie-weights = true\n",
        "\nlr = 0.0003\n", "\nweight-decay = 0.1\n", "\nmomentum = 0.9\n",
        "\nclip-grad-norm = 0.0\n", "\nbatch-size = 32\n", "\nsteps = 2000\n",
        "\ndata = \"my \\\"corpus\\\"\\\\path.txt\"\n", "\nprecision = \"fp32\"\n"}) {
    EXPECT_NE(text.find(expected), std::string::npos) << expected << " in\n" << text;
  }
  EXPECT_EQ(text.find("epochs"), std::string::npos);  // a language model takes no --epochs
  EXPECT_EQ(text.find("layers"), std::string::npos);  // size flags only when given
  EXPECT_NE(config_file_text(train::defaults_for("mlp"), "m.safetensors").find("\nepochs = 5\n"),
            std::string::npos);
}

}  // namespace
}  // namespace grove::program
