// RunSummary: the end of a `grove train` run as text and as one JSON line (the fields and what
// each means are in run_summary.h). It reads counters; it changes nothing.
#include "models/program/run_summary.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/caching_allocator.h"

namespace grove::program {

std::string format_number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.6g", value);
  return buffer;
}

RunSummary summarize(const train::Trainer& trainer, const train::TrainResult& result) {
  const train::TrainConfig& config = trainer.config();
  RunSummary summary;
  summary.model = config.model;
  summary.device = config.device.to_string();
  summary.mode = train::to_string(config.mode);
  summary.epochs = config.model == "gpt" ? 0 : config.epochs;
  summary.steps = trainer.steps_done();
  const std::size_t tail = std::min<std::size_t>(result.losses.size(), 50);
  double sum = 0.0;
  for (std::size_t i = result.losses.size() - tail; i < result.losses.size(); ++i) {
    sum += result.losses[i];
  }
  summary.train_loss = tail > 0 ? sum / static_cast<double>(tail) : NAN;
  if (!result.evals.empty()) {
    const train::EvalReport& last = result.evals.back();
    if (config.model == "gpt") {
      summary.val_loss = last.loss;
    } else {
      summary.test_accuracy = last.accuracy;
      summary.test_loss = last.loss;
    }
  }
  summary.step_time_ms_median = result.median_step_ms();
  summary.samples_per_s = result.samples_per_s;
  summary.seconds = result.seconds;
  summary.peak_memory_bytes = allocator_for(config.device).stats().peak_allocated_bytes;
  summary.graph_stats = graphs::stats();
  return summary;
}

std::string describe_eval(const std::string& model, const train::EvalReport& eval) {
  std::ostringstream out;
  if (model == "gpt") {
    out << "step " << eval.step << ": val loss " << format_number(eval.loss);
    if (!eval.sample.empty()) out << "\n--- sample ---\n" << eval.sample << "\n--------------";
  } else {
    out << "epoch " << eval.epoch + 1 << ": test accuracy " << format_number(eval.accuracy)
        << ", test loss " << format_number(eval.loss);
  }
  return out.str();
}

std::string RunSummary::to_text() const {
  std::ostringstream out;
  out << "done: " << steps << " steps in " << format_number(seconds) << " s; train loss "
      << format_number(train_loss);
  if (model == "gpt") {
    out << ", val loss " << format_number(val_loss);
  } else {
    out << ", test accuracy " << format_number(test_accuracy);
  }
  out << "\nstep time " << format_number(step_time_ms_median) << " ms (median), "
      << format_number(samples_per_s) << " samples/s, peak memory "
      << format_number(static_cast<double>(peak_memory_bytes) / (1 << 20)) << " MiB\n";
  if (mode == "graphed") out << graph_stats.to_text();
  return out.str();
}

std::string RunSummary::to_json() const {
  const graphs::TreeCounters& trees = graph_stats.trees;
  // Calls that did not run as graphs: the managers' eager fallbacks and compiled calls that ran
  // the function as written.
  const std::uint64_t fallbacks = trees.eager_fallbacks + graph_stats.eager_calls;
  nlohmann::ordered_json object = {
      {"model", model},   {"device", device}, {"mode", mode},
      {"epochs", epochs}, {"steps", steps},   {"train_loss", train_loss},
  };
  if (model == "gpt") {
    object["val_loss"] = val_loss;
  } else {
    object["test_accuracy"] = test_accuracy;
  }
  object["step_time_ms_median"] = step_time_ms_median;
  object["samples_per_s"] = samples_per_s;
  object["peak_memory_bytes"] = peak_memory_bytes;
  object["graph_stats"] = {{"warmups", trees.warmups},
                           {"recordings", trees.recordings},
                           {"replays", trees.replays},
                           {"checkpoints", trees.checkpoints},
                           {"fallbacks", fallbacks}};
  return object.dump();
}

}  // namespace grove::program
