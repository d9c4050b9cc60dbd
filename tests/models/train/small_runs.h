// Runs small enough for a test, for any registered model, by its task: a few batches of a
// Fashion-MNIST subset for an image classifier, a few steps on short batches of windows of the
// text corpus for a language model. What the registry-wide training tests (train_test,
// checkpoint_test) run, so a new model is trained, compared and resumed with no edit there.
// Header-only; the data may be missing (skip with data_missing()).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "models/data/fashion_mnist.h"
#include "models/data/text_corpus.h"
#include "models/train/config.h"
#include "models/zoo/registry.h"

namespace grove::train::test_runs {

// A small run of `spec`'s model: its defaults, shortened.
inline TrainConfig small_run(const zoo::ModelSpec& spec) {
  TrainConfig config = defaults_for(spec.name);
  switch (spec.task) {
    case zoo::TaskKind::ImageClassification:
      config.epochs = 1;
      config.batch_size = 32;
      config.train_limit = 96;  // 3 batches
      config.test_limit = 64;
      break;
    case zoo::TaskKind::LanguageModel:
      config.steps = 4;
      config.batch_size = 4;
      config.eval_every = 2;
      config.eval_batches = 1;
      config.sample_tokens = 8;
      config.clip_grad_norm = 1.0;
      break;
  }
  return config;
}

// Why `spec`'s data is not here (a test skips), or "" when it is.
inline std::string data_missing(const zoo::ModelSpec& spec) {
  switch (spec.task_spec().data) {
    case zoo::DataKind::FashionMnist:
      if (!std::filesystem::exists(data::default_fashion_mnist_dir() /
                                   "train-images-idx3-ubyte.gz")) {
        return "Fashion-MNIST is not installed (Debian package dataset-fashion-mnist)";
      }
      return "";
    case zoo::DataKind::TextCorpus:
      return data::default_corpus_paths().empty() ? "no license texts to train on" : "";
  }
  return "";
}

// Every registered model, for ::testing::ValuesIn.
inline std::vector<const zoo::ModelSpec*> every_model() {
  std::vector<const zoo::ModelSpec*> specs;
  for (const zoo::ModelSpec& spec : zoo::model_specs()) specs.push_back(&spec);
  return specs;
}

// A test name for a model's instance of a parameterised test: its registry name.
inline std::string model_test_name(const ::testing::TestParamInfo<const zoo::ModelSpec*>& info) {
  return info.param->name;
}

}  // namespace grove::train::test_runs
