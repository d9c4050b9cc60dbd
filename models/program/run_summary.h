// What a finished `grove train` run reports: a few lines for a person and one JSON line for a
// script (--json):
//   {"model","device","mode","precision","epochs","steps","train_loss",<metric>,"step_time_ms_median",
//    "samples_per_s","peak_memory_bytes",
//    "graph_stats":{"warmups","recordings","replays","checkpoints","fallbacks"}}
// where <metric> is the first of the model's task's metrics (zoo::TaskSpec::metrics):
// "test_accuracy" for image classifiers, "val_loss" for language models; "epochs" is 0 for a
// task that counts steps.
// train_loss is the mean loss of the last (up to) 50 steps; the evaluation figures are the last
// evaluation's; peak_memory_bytes is the device allocator's peak of allocated bytes (graph
// pools included).
#pragma once

#include <cstdint>
#include <string>

#include "graphs/explain.h"
#include "models/train/trainer.h"
#include "models/zoo/registry.h"

namespace grove::program {

struct RunSummary {
  std::string model, device, mode, precision;
  std::int64_t epochs = 0, steps = 0;
  double train_loss = 0.0;
  // The last evaluation's headline figure (NAN when the run evaluated nothing).
  zoo::Metric metric = zoo::Metric::TestAccuracy;
  double metric_value = NAN;
  double step_time_ms_median = 0.0, samples_per_s = 0.0, seconds = 0.0;
  std::uint64_t peak_memory_bytes = 0;
  graphs::GraphStats graph_stats;

  std::string to_text() const;
  std::string to_json() const;
};

RunSummary summarize(const train::Trainer& trainer, const train::TrainResult& result);
// An evaluation as the model's task reports it: "epoch 2: test accuracy 0.8731, test loss 0.3562"
// (a task that counts epochs), or "step 500: val loss 2.1432" and the sample, if any.
std::string describe_eval(const std::string& model, const train::EvalReport& eval);
// Shortest of %g-like forms, e.g. 0.1, 3e-04 -> "0.0003".
std::string format_number(double value);

}  // namespace grove::program
