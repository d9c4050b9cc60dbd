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
  const zoo::TaskSpec& task = trainer.spec().task_spec();
  RunSummary summary;
  summary.model = config.model;
  summary.device = config.device.to_string();
  summary.mode = train::to_string(config.mode);
  summary.precision = train::to_string(config.precision);
  summary.epochs = task.trains_in_epochs ? config.epochs : 0;
  summary.steps = trainer.steps_done();
  const std::size_t tail = std::min<std::size_t>(result.losses.size(), 50);
  double sum = 0.0;
  for (std::size_t i = result.losses.size() - tail; i < result.losses.size(); ++i) {
    sum += result.losses[i];
  }
  summary.train_loss = tail > 0 ? sum / static_cast<double>(tail) : NAN;
  summary.metric = task.metrics.front();
  if (!result.evals.empty()) summary.metric_value = result.evals.back().metric(summary.metric);
  summary.step_time_ms_median = result.median_step_ms();
  summary.samples_per_s = result.samples_per_s;
  summary.seconds = result.seconds;
  summary.peak_memory_bytes = allocator_for(config.device).stats().peak_allocated_bytes;
  summary.graph_stats = graphs::stats();
  return summary;
}

std::string describe_eval(const std::string& model, const train::EvalReport& eval) {
  const zoo::TaskSpec& task = zoo::model_spec(model).task_spec();
  std::ostringstream out;
  if (task.trains_in_epochs) {
    out << "epoch " << eval.epoch + 1 << ":";
  } else {
    out << "step " << eval.step << ":";
  }
  const char* separator = " ";
  for (const zoo::Metric metric : task.metrics) {
    out << separator << zoo::metric_label(metric) << " " << format_number(eval.metric(metric));
    separator = ", ";
  }
  if (!eval.sample.empty()) out << "\n--- sample ---\n" << eval.sample << "\n--------------";
  return out.str();
}

std::string RunSummary::to_text() const {
  std::ostringstream out;
  out << "done: " << steps << " steps in " << format_number(seconds) << " s; train loss "
      << format_number(train_loss) << ", " << zoo::metric_label(metric) << " "
      << format_number(metric_value);
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
      {"model", model},           {"device", device}, {"mode", mode},
      {"precision", precision},   {"epochs", epochs}, {"steps", steps},
      {"train_loss", train_loss},
  };
  object[zoo::metric_name(metric)] = metric_value;
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
