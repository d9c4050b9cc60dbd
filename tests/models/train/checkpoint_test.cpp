// Checkpoints of a run: a run stopped, saved and restored goes on exactly as the run that was
// not stopped (bit for bit on the CPU, eager or graphed, mid-epoch or at an epoch's end; every
// registered model in a small run), and checkpoints of another model, of other shapes, or
// damaged are refused by name.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "models/data/fashion_mnist.h"
#include "models/data/text_corpus.h"
#include "models/train/checkpoint.h"
#include "models/train/trainer.h"
#include "models/zoo/registry.h"
#include "tests/models/train/small_runs.h"

namespace grove::train {
namespace {

bool have_fashion_mnist() {
  return std::filesystem::exists(data::default_fashion_mnist_dir() / "train-images-idx3-ubyte.gz");
}

#define SKIP_WITHOUT_FASHION_MNIST() \
  if (!have_fashion_mnist())         \
  GTEST_SKIP() << "Fashion-MNIST is not installed (Debian package dataset-fashion-mnist)"

std::filesystem::path temp_path(const std::string& name) {
  return std::filesystem::temp_directory_path() /
         ("grove_checkpoint_" + std::to_string(::getpid()) + "_" + name);
}

std::string error_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

TrainConfig small_mlp() {
  TrainConfig config = defaults_for("mlp");
  config.epochs = 2;
  config.train_limit = 600;  // 5 batches per epoch, the last of 88
  config.test_limit = 100;
  config.schedule = "cosine";
  config.warmup_steps = 2;
  return config;
}

TrainConfig small_gpt() {
  TrainConfig config = defaults_for("gpt");
  config.steps = 6;
  config.batch_size = 2;
  config.eval_every = 3;
  config.eval_batches = 1;
  config.sample_tokens = 4;
  return config;
}

// Runs `config` to the end; then again, stopped after `stop_after` steps, saved, restored into
// a fresh Trainer (in `resume_mode`) and run to the end: the losses after the stop and the final
// weights must be the same.
void expect_resume_equals_uninterrupted(TrainConfig config, std::int64_t stop_after,
                                        Mode resume_mode) {
  Trainer uninterrupted(config);
  const TrainResult whole = uninterrupted.run();

  const std::filesystem::path path = temp_path("resume.safetensors");
  {
    Trainer first(config);
    Callbacks callbacks;
    callbacks.should_stop = [&] { return first.steps_done() == stop_after; };
    const TrainResult part = first.run(callbacks);
    ASSERT_EQ(part.steps, stop_after);
    save_checkpoint(first, path);
  }
  const Checkpoint saved = read_checkpoint(path);
  EXPECT_EQ(saved.position.steps_done, stop_after);
  TrainConfig resumed_config = saved.config;
  resumed_config.mode = resume_mode;
  Trainer resumed(resumed_config);
  restore_checkpoint(resumed, saved);
  const TrainResult rest = resumed.run();
  std::filesystem::remove(path);

  ASSERT_EQ(static_cast<std::int64_t>(rest.losses.size()) + stop_after,
            static_cast<std::int64_t>(whole.losses.size()));
  for (std::size_t i = 0; i < rest.losses.size(); ++i) {
    EXPECT_EQ(rest.losses[i], whole.losses[static_cast<std::size_t>(stop_after) + i])
        << "step " << stop_after + static_cast<std::int64_t>(i) + 1;
  }
  ASSERT_FALSE(rest.evals.empty());
  EXPECT_EQ(rest.evals.back().loss, whole.evals.back().loss);
  const auto expected = uninterrupted.model().state_dict();
  const auto got = resumed.model().state_dict();
  ASSERT_EQ(expected.size(), got.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(expected[i].second.to_vector<float>(), got[i].second.to_vector<float>())
        << expected[i].first;
  }
}

TEST(Checkpoint, ConfigSurvivesJson) {
  TrainConfig config = small_mlp();
  config.lr = 0.0123;
  config.seed = 77;
  config.data = "some dir";
  const TrainConfig back = config_from_json(config_to_json(config));
  EXPECT_EQ(back.model, "mlp");
  EXPECT_EQ(back.lr, 0.0123);
  EXPECT_EQ(back.seed, 77u);
  EXPECT_EQ(back.data, "some dir");
  EXPECT_EQ(back.schedule, "cosine");
  EXPECT_EQ(back.train_limit, 600);
  EXPECT_NE(error_of([] { config_from_json("{\"model\": \"mlp\"}"); }).find("no 'device'"),
            std::string::npos);
  EXPECT_NE(error_of([] { config_from_json("not json"); }).find("not JSON"), std::string::npos);
}

TEST(Checkpoint, MlpResumedMidEpochEqualsUninterrupted) {
  SKIP_WITHOUT_FASHION_MNIST();
  expect_resume_equals_uninterrupted(small_mlp(), 7, Mode::Eager);
}

TEST(Checkpoint, MlpResumedAtAnEpochsEndEqualsUninterrupted) {
  SKIP_WITHOUT_FASHION_MNIST();
  expect_resume_equals_uninterrupted(small_mlp(), 5, Mode::Eager);
}

TEST(Checkpoint, MlpResumedGraphedEqualsUninterruptedEager) {
  SKIP_WITHOUT_FASHION_MNIST();
  expect_resume_equals_uninterrupted(small_mlp(), 3, Mode::Graphed);
}

// A run cut short by its step limit mid-epoch, resumed without the limit, finishes that epoch in
// the same order (constant rate: the schedule does not depend on the run's length).
TEST(Checkpoint, MlpCutByTheStepLimitAndExtendedEqualsUninterrupted) {
  SKIP_WITHOUT_FASHION_MNIST();
  TrainConfig config = small_mlp();
  config.schedule = "constant";
  const TrainResult whole = Trainer(config).run();

  const std::filesystem::path path = temp_path("extended.safetensors");
  TrainConfig limited = config;
  limited.steps = 7;  // in the second epoch
  Trainer first(limited);
  const TrainResult part = first.run();
  ASSERT_EQ(part.steps, 7);
  EXPECT_EQ(part.evals.size(), 2u);  // the first epoch's, and the run's end
  EXPECT_EQ(first.position().epoch, 1);
  EXPECT_EQ(first.position().next_batch, 2);
  save_checkpoint(first, path);
  const Checkpoint saved = read_checkpoint(path);
  std::filesystem::remove(path);
  TrainConfig extended = saved.config;
  extended.steps = 0;
  Trainer resumed(extended);
  restore_checkpoint(resumed, saved);
  const TrainResult rest = resumed.run();
  ASSERT_EQ(rest.losses.size() + 7, whole.losses.size());
  for (std::size_t i = 0; i < rest.losses.size(); ++i) {
    EXPECT_EQ(rest.losses[i], whole.losses[7 + i]) << "step " << 8 + i;
  }
  EXPECT_EQ(rest.evals.back().loss, whole.evals.back().loss);
}

TEST(Checkpoint, GptResumedEqualsUninterrupted) {
  if (data::default_corpus_paths().empty()) GTEST_SKIP() << "no license texts to train on";
  expect_resume_equals_uninterrupted(small_gpt(), 4, Mode::Eager);
}

// Every registered model: a small run (small_runs.h) stopped mid-way, saved, restored and run
// to its end equals the run that was not stopped (a classifier: two epochs of 3 batches,
// stopped in the second; a language model: 4 steps, stopped after 3).
class EveryModelResumes : public ::testing::TestWithParam<const zoo::ModelSpec*> {};

TEST_P(EveryModelResumes, ResumedEqualsUninterrupted) {
  const zoo::ModelSpec& spec = *GetParam();
  const std::string missing = test_runs::data_missing(spec);
  if (!missing.empty()) GTEST_SKIP() << missing;
  TrainConfig config = test_runs::small_run(spec);
  std::int64_t stop_after = 3;
  if (spec.task_spec().trains_in_epochs) {
    config.epochs = 2;
    stop_after = 4;
  }
  expect_resume_equals_uninterrupted(config, stop_after, Mode::Eager);
}

INSTANTIATE_TEST_SUITE_P(Registry, EveryModelResumes, ::testing::ValuesIn(test_runs::every_model()),
                         test_runs::model_test_name);

TEST(Checkpoint, AnotherModelOrOtherShapesAreRefused) {
  if (data::default_corpus_paths().empty()) GTEST_SKIP() << "no license texts to train on";
  SKIP_WITHOUT_FASHION_MNIST();
  const std::filesystem::path path = temp_path("other.safetensors");
  TrainConfig mlp_config = small_mlp();
  mlp_config.epochs = 1;
  Trainer mlp(mlp_config);
  save_checkpoint(mlp, path);
  Checkpoint saved = read_checkpoint(path);
  std::filesystem::remove(path);

  Trainer gpt(small_gpt());
  const std::string other_model = error_of([&] { restore_checkpoint(gpt, saved); });
  EXPECT_NE(other_model.find("holds a 'mlp' model"), std::string::npos) << other_model;

  for (auto& [name, tensor] : saved.model) {
    if (name == "fc1.weight") tensor = zeros({3, 3});  // of the wrong shape
  }
  const std::string shapes = error_of([&] { restore_checkpoint(mlp, saved); });
  EXPECT_NE(shapes.find("fc1.weight"), std::string::npos) << shapes;
}

TEST(Checkpoint, DamagedOrForeignFilesAreRefused) {
  if (data::default_corpus_paths().empty()) GTEST_SKIP() << "no license texts to train on";
  const std::filesystem::path path = temp_path("damaged.safetensors");
  Trainer gpt(small_gpt());
  save_checkpoint(gpt, path);
  {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(-3, std::ios::end);
    file.put('\x55');
  }
  EXPECT_NE(error_of([&] { read_checkpoint(path); }).find("checksum"), std::string::npos);
  // Cut short anywhere (in the length, the header, the data): refused, naming the file.
  const auto size = static_cast<std::int64_t>(std::filesystem::file_size(path));
  for (const std::int64_t keep :
       {std::int64_t{0}, std::int64_t{5}, std::int64_t{100}, size / 3, size / 2, size - 1}) {
    std::filesystem::resize_file(path, static_cast<std::uintmax_t>(keep));
    EXPECT_NE(error_of([&] { read_checkpoint(path); }).find(path.string()), std::string::npos)
        << "cut to " << keep << " bytes";
    save_checkpoint(gpt, path);
  }
  std::filesystem::remove(path);
  EXPECT_NE(error_of([&] { read_checkpoint(path); }).find(path.string()), std::string::npos);
}

}  // namespace
}  // namespace grove::train
