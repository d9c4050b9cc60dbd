// The training loop: config checks, the loss log, and short runs on the real data (skipped when
// the Debian package dataset-fashion-mnist is not installed): a small subset reaches a set
// accuracy, and graphed runs of every registered model (small_runs.h) give eager's losses bit
// for bit on the CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "core/error.h"
#include "core/tensor.h"
#include "graphs/explain.h"
#include "models/data/fashion_mnist.h"
#include "models/data/text_corpus.h"
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

void expect_error(const TrainConfig& config, const std::string& words) {
  try {
    config.validate();
    FAIL() << "expected an error mentioning '" << words << "'";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find(words), std::string::npos) << error.what();
  }
}

TEST(TrainConfig, DefaultsAreTheReferenceSettings) {
  const TrainConfig mlp = defaults_for("mlp");
  EXPECT_EQ(mlp.epochs, 5);
  EXPECT_EQ(mlp.steps, 0);
  EXPECT_EQ(mlp.optimizer, "sgd");
  EXPECT_DOUBLE_EQ(mlp.lr, 0.1);
  EXPECT_DOUBLE_EQ(mlp.momentum, 0.9);
  EXPECT_EQ(mlp.batch_size, 128);
  EXPECT_EQ(mlp.schedule, "cosine");
  EXPECT_EQ(defaults_for("cnn").epochs, 3);
  const TrainConfig gpt = defaults_for("gpt");
  EXPECT_EQ(gpt.optimizer, "adamw");
  EXPECT_EQ(gpt.batch_size, 32);
  EXPECT_EQ(gpt.steps, 2000);
  EXPECT_EQ(gpt.warmup_steps, 100);
  EXPECT_DOUBLE_EQ(gpt.lr, 3e-4);
  EXPECT_DOUBLE_EQ(gpt.weight_decay, 0.01);
  const TrainConfig resnet = defaults_for("resnet");
  EXPECT_EQ(resnet.epochs, 2);
  EXPECT_DOUBLE_EQ(resnet.lr, 0.1);
  EXPECT_EQ(resnet.batch_size, 128);
  // Every registered model's defaults are a valid config of that model.
  for (const zoo::ModelSpec& spec : zoo::model_specs()) {
    EXPECT_NO_THROW(defaults_for(spec.name).validate()) << spec.name;
    EXPECT_EQ(defaults_for(spec.name).model, spec.name);
  }
  EXPECT_THROW(defaults_for("alexnet"), Error);
  const TrainConfig plain;
  EXPECT_EQ(plain.model, zoo::kDefaultModel);
}

TEST(TrainConfig, ErrorsNameTheField) {
  TrainConfig config = defaults_for("mlp");
  config.optimizer = "lion";
  expect_error(config, "optimizer: expected sgd or adamw, got 'lion'");
  config = defaults_for("mlp");
  config.batch_size = 0;
  expect_error(config, "batch size");
  config = defaults_for("mlp");
  config.lr = -1;
  expect_error(config, "lr");
  config = defaults_for("gpt");
  config.steps = 0;
  expect_error(config, "gpt trains for a number of steps");
  config = defaults_for("mlp");
  config.model = "alexnet";  // the message lists the registered models
  expect_error(config, "model: expected mlp, cnn, gpt");
  expect_error(config, "got 'alexnet'");
  EXPECT_EQ(parse_mode("graphed"), Mode::Graphed);
  EXPECT_THROW(parse_mode("fast"), Error);
}

TEST(TrainConfig, TotalSteps) {
  TrainConfig gpt = defaults_for("gpt");  // counts steps: epochs do not matter
  gpt.epochs = 3;
  EXPECT_EQ(gpt.total_steps(10), 2000);
  TrainConfig config = defaults_for("mlp");
  config.epochs = 2;
  EXPECT_EQ(config.total_steps(10), 20);
  config.steps = 15;
  EXPECT_EQ(config.total_steps(10), 15);
  config.steps = 50;
  EXPECT_EQ(config.total_steps(10), 20);
}

TEST(LossLog, ReadsWhatWasRecordedInOrder) {
  LossLog log(kCPU, 3);
  EXPECT_FALSE(log.record(full({}, 1.5f)));
  EXPECT_FALSE(log.record(full({1}, 2.5f)));
  EXPECT_TRUE(log.record(full({}, 3.5f)));
  EXPECT_THROW(log.record(full({}, 4.5f)), Error);  // full: read first
  EXPECT_EQ(log.read(), (std::vector<double>{1.5, 2.5, 3.5}));
  EXPECT_TRUE(log.read().empty());
  log.record(full({}, 7.0f));
  EXPECT_EQ(log.read(), (std::vector<double>{7.0}));
}

TEST(Trainer, MissingDataNamesThePathAndThePackage) {
  TrainConfig config = defaults_for("mlp");
  config.data = "no/such/dir";
  try {
    Trainer trainer(config);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("no/such/dir"), std::string::npos) << message;
    EXPECT_NE(message.find("dataset-fashion-mnist"), std::string::npos) << message;
  }
}

// A few hundred steps on a subset: the MLP learns, eagerly and graphed (chance is 0.10; 12800
// images for 2 epochs, 200 steps, with the reference settings reach about 0.83 on the first
// 1000 test images).
class TrainerLearns : public ::testing::TestWithParam<Mode> {};

TEST_P(TrainerLearns, MlpOnASubset) {
  SKIP_WITHOUT_FASHION_MNIST();
  TrainConfig config = defaults_for("mlp");
  config.mode = GetParam();
  config.epochs = 2;
  config.train_limit = 12800;
  config.test_limit = 1000;
  Trainer trainer(config);
  std::vector<StepReport> reports;
  std::vector<EvalReport> evals;
  Callbacks callbacks;
  callbacks.on_step = [&](const StepReport& report) { reports.push_back(report); };
  callbacks.on_eval = [&](const EvalReport& report) { evals.push_back(report); };
  const TrainResult result = trainer.run(callbacks);
  const std::int64_t batches = 12800 / 128;  // 100, all full
  EXPECT_EQ(result.steps, 2 * batches);
  ASSERT_EQ(reports.size(), static_cast<std::size_t>(2 * batches));
  EXPECT_EQ(reports.back().step, 2 * batches);
  EXPECT_EQ(reports.back().samples, 128);
  EXPECT_EQ(reports.back().epoch, 1);
  ASSERT_EQ(evals.size(), 2u);
  EXPECT_GT(evals.back().accuracy, 0.78);
  EXPECT_LT(result.losses.back(), result.losses.front());
  for (double loss : result.losses) EXPECT_TRUE(std::isfinite(loss));
}

INSTANTIATE_TEST_SUITE_P(EagerAndGraphed, TrainerLearns,
                         ::testing::Values(Mode::Eager, Mode::Graphed),
                         [](const ::testing::TestParamInfo<Mode>& info) {
                           return std::string(to_string(info.param));
                         });

// Graphed mode compiles the whole step; on the CPU its losses equal eager's bit for bit,
// including an epoch's last, smaller batch (another signature) and a schedule.
void expect_graphed_equals_eager(TrainConfig config) {
  config.mode = Mode::Eager;
  const TrainResult eager = Trainer(config).run();
  config.mode = Mode::Graphed;
  Trainer graphed_trainer(config);
  const TrainResult graphed = graphed_trainer.run();
  ASSERT_EQ(eager.losses.size(), graphed.losses.size());
  for (std::size_t i = 0; i < eager.losses.size(); ++i) {
    EXPECT_EQ(eager.losses[i], graphed.losses[i]) << "step " << i + 1;
  }
  ASSERT_EQ(eager.evals.size(), graphed.evals.size());
  for (std::size_t i = 0; i < eager.evals.size(); ++i) {
    EXPECT_EQ(eager.evals[i].loss, graphed.evals[i].loss);
  }
  EXPECT_EQ(graphed_trainer.compile_stats().eager_calls, 0u);
}

TEST(Trainer, GraphedMlpEqualsEager) {
  SKIP_WITHOUT_FASHION_MNIST();
  TrainConfig config = defaults_for("mlp");
  config.epochs = 2;
  config.train_limit = 600;  // 4 full batches and one of 88 per epoch
  config.test_limit = 200;
  config.schedule = "cosine";
  config.warmup_steps = 3;
  expect_graphed_equals_eager(config);
}

// In bf16 and fp16 (autocast; fp16 with the loss scaler, its skips decided on the device) the
// compiled whole step equals the eager one bit for bit on the CPU as well.
TEST(Trainer, GraphedMlpEqualsEagerInBf16) {
  SKIP_WITHOUT_FASHION_MNIST();
  TrainConfig config = defaults_for("mlp");
  config.epochs = 1;
  config.train_limit = 600;
  config.test_limit = 200;
  config.precision = Precision::BFloat16;
  expect_graphed_equals_eager(config);
}

TEST(Trainer, GraphedGptEqualsEagerInBf16AndFp16) {
  const zoo::ModelSpec& spec = zoo::model_spec("gpt");
  const std::string missing = test_runs::data_missing(spec);
  if (!missing.empty()) GTEST_SKIP() << missing;
  for (const Precision precision : {Precision::BFloat16, Precision::Float16}) {
    SCOPED_TRACE(to_string(precision));
    TrainConfig config = test_runs::small_run(spec);
    config.precision = precision;
    expect_graphed_equals_eager(config);
  }
}

// Every registered model, a small run of it (small_runs.h: for the cnn 3 batches of 32, for the
// gpt 4 steps of 4 windows with clipping, evaluations and samples): graphed equals eager.
class EveryModel : public ::testing::TestWithParam<const zoo::ModelSpec*> {};

TEST_P(EveryModel, GraphedEqualsEager) {
  const zoo::ModelSpec& spec = *GetParam();
  const std::string missing = test_runs::data_missing(spec);
  if (!missing.empty()) GTEST_SKIP() << missing;
  expect_graphed_equals_eager(test_runs::small_run(spec));
}

// A few steps of the real training loop lower the loss (the model's defaults, a small run of
// three epochs at a constant rate or 12 steps of windows): each model trains through the
// Trainer, not only through zoo_test's plain SGD steps.
TEST_P(EveryModel, SmallRunLowersTheLoss) {
  const zoo::ModelSpec& spec = *GetParam();
  const std::string missing = test_runs::data_missing(spec);
  if (!missing.empty()) GTEST_SKIP() << missing;
  TrainConfig config = test_runs::small_run(spec);
  config.schedule = "constant";
  if (spec.task_spec().trains_in_epochs) {
    config.epochs = 3;
  } else {
    config.steps = 12;
    config.eval_every = 12;
  }
  const TrainResult result = Trainer(config).run();
  ASSERT_GE(result.losses.size(), 9u);
  // The mean of the last three steps' losses below the first three's: one batch's loss is
  // noisy, three are steadier.
  const auto mean3 = [](auto begin) { return (begin[0] + begin[1] + begin[2]) / 3.0; };
  EXPECT_LT(mean3(result.losses.end() - 3), mean3(result.losses.begin())) << spec.name;
  for (const double loss : result.losses) EXPECT_TRUE(std::isfinite(loss)) << spec.name;
}

INSTANTIATE_TEST_SUITE_P(Registry, EveryModel, ::testing::ValuesIn(test_runs::every_model()),
                         test_runs::model_test_name);

}  // namespace
}  // namespace grove::train
