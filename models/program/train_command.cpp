// `grove train`: flags to a TrainConfig, a run with progress, evaluations, metrics and
// checkpoints, Ctrl-C handled between steps, and a summary (one JSON line with --json).
//
// Flags left out take the model's reference settings (train::defaults_for, from the model
// registry; the help text lists them per model from there too). With --resume the
// run's settings come from the checkpoint: only how and how long it runs (--device, --mode,
// --epochs, --steps) may change; another value for a setting that shapes the numbers (--lr,
// --batch-size, ...) is refused, since the run would no longer continue the one saved.
//
// Data parallel: `--nproc N` starts N copies of this command (dist::launch_local) with the
// process-group variables set, and each copy, finding GROVE_WORLD_SIZE in its environment, joins
// the group and trains its shard (train::Trainer's data-parallel mode; --batch-size is per
// process). Rank 0 alone prints, writes the metrics and the checkpoints; every rank reads a
// checkpoint to resume. Started by hand with the same variables on several hosts, the copies form
// one job the same way.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <string_view>

#include "core/caching_allocator.h"
#include "core/error.h"
#include "core/stream.h"
#include "dist/launch.h"
#include "dist/process_group.h"
#include "graphs/explain.h"
#include "models/program/commands.h"
#include "models/program/ctrl_c.h"
#include "models/program/flag_checks.h"
#include "models/program/metrics.h"
#include "models/program/progress.h"
#include "models/program/run_config_file.h"
#include "models/program/run_summary.h"
#include "models/program/threads.h"
#include "models/train/checkpoint.h"
#include "models/train/trainer.h"
#include "models/zoo/registry.h"

namespace grove::program {
namespace {

// Ctrl-C: the first asks the run to stop after the step in progress (and to save a checkpoint);
// a second ends the process at once (the last checkpoint on disk stays whole: files are replaced
// atomically). Taken on a thread of its own: Note [Ctrl-C on a thread of its own] in ctrl_c.h.

struct TrainFlags {
  std::string model = zoo::kDefaultModel;
  std::string device;
  std::string mode = "eager";
  std::string precision;
  std::int64_t epochs = 0, steps = 0, batch_size = 0, warmup_steps = 0, train_limit = 0,
               test_limit = 0, checkpoint_every = 0, read_every = 0, nproc = 1, threads = 0;
  double lr = 0, momentum = 0, weight_decay = 0, clip = 0;
  std::string optimizer, schedule, data, checkpoint, metrics;
  zoo::ModelOptions shape;   // --preset, --layers, --heads, --embd, --block, --dropout
  bool tie_weights = false;  // --tie-weights
  std::uint64_t seed = 0;
  bool resume = false, json = false, explain = false, plain = false;
  CLI::App* command = nullptr;
  bool given(const char* flag) const { return command->count(flag) > 0; }
};

// The flags' values over a base config: every flag the user gave replaces the base's value.
void apply_flags(const TrainFlags& flags, train::TrainConfig& config, bool resuming) {
  auto set = [&](const char* flag, auto& field, const auto& value) {
    if (!flags.given(flag)) return;
    GROVE_CHECK(!resuming || field == value, flag,
                ": a resumed run keeps the settings it was saved with (the checkpoint has ", field,
                ", the flag says ", value,
                "); leave the flag out, or start a new run without --resume");
    field = value;
  };
  set("--batch-size", config.batch_size, flags.batch_size);
  set("--optimizer", config.optimizer, flags.optimizer);
  set("--lr", config.lr, flags.lr);
  set("--momentum", config.momentum, flags.momentum);
  set("--weight-decay", config.weight_decay, flags.weight_decay);
  set("--schedule", config.schedule, flags.schedule);
  set("--warmup-steps", config.warmup_steps, flags.warmup_steps);
  set("--clip-grad-norm", config.clip_grad_norm, flags.clip);
  set("--seed", config.seed, flags.seed);
  set("--data", config.data, flags.data);
  set("--train-limit", config.train_limit, flags.train_limit);
  set("--test-limit", config.test_limit, flags.test_limit);
  // The model's shape (zoo::ModelOptions): the checkpoint's on resume.
  set("--preset", config.model_options.preset, flags.shape.preset);
  set("--layers", config.model_options.layers, flags.shape.layers);
  set("--heads", config.model_options.heads, flags.shape.heads);
  set("--embd", config.model_options.embd, flags.shape.embd);
  set("--block", config.model_options.block, flags.shape.block);
  set("--dropout", config.model_options.dropout, flags.shape.dropout);
  set("--tie-weights", config.model_options.tie_weights, std::int64_t{flags.tie_weights ? 1 : 0});
  // How and how long: free to change on resume.
  if (flags.given("--epochs")) config.epochs = flags.epochs;
  if (flags.given("--steps")) config.steps = flags.steps;
  if (flags.given("--mode")) config.mode = train::parse_mode(flags.mode);
  config.device = parse_device(flags.device.empty() ? default_device_text() : flags.device);
  // Precision is how the step computes (the master weights are float32 in every precision): a
  // resumed run keeps its own unless the flag changes it.
  if (flags.given("--precision")) {
    config.precision = train::parse_precision(flags.precision);
  } else if (!resuming) {
    config.precision = default_precision(config.device);
  }
  config.read_every = flags.read_every;
  if (flags.explain) config.explain = graphs::ExplainLevel::On;
}

std::string describe(const train::TrainConfig& config, const train::Trainer& trainer) {
  const std::string shape =
      config.model_options.empty() ? "" : " (" + config.model_options.describe() + ")";
  std::string text = "grove train: " + config.model + shape + " on " + config.device.to_string() +
                     ", " + train::to_string(config.mode) + ", " +
                     train::to_string(config.precision) + ", ";
  if (trainer.spec().task_spec().trains_in_epochs) {
    text += std::to_string(config.epochs) + " epochs of " +
            std::to_string(trainer.batches_per_epoch()) + " steps";
    if (config.steps > 0) text += " (at most " + std::to_string(config.steps) + " steps)";
  } else {
    text += std::to_string(trainer.total_steps()) + " steps";
  }
  text += ", " + config.optimizer + " lr " + format_number(config.lr) + " (" + config.schedule +
          "), batch " + std::to_string(config.batch_size) + ", seed " + std::to_string(config.seed);
  return text;
}

// A value as a shell reads it back: quoted when it holds anything but plain characters.
std::string shell_word(const std::string& value) {
  const bool plain = !value.empty() && value.find_first_not_of(
                                           "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTU"
                                           "VWXYZ0123456789-_./:=,+") == std::string::npos;
  if (plain) return value;
  std::string quoted = "'";
  for (const char c : value) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// The command that resumes this run from `checkpoint`: --resume, the checkpoint, and every flag
// the run was given that the checkpoint does not hold (how and where it ran, its outputs); the
// settings that shape the numbers come back from the checkpoint.
std::string resume_command(const TrainFlags& flags, const std::string& checkpoint) {
  std::string command = "grove train --resume --checkpoint " + shell_word(checkpoint);
  for (const char* option :
       {"--device", "--mode", "--precision", "--epochs", "--steps", "--checkpoint-every",
        "--metrics", "--read-every", "--nproc", "--threads"}) {
    if (flags.given(option)) {
      command += std::string(" ") + option + " " +
                 shell_word(flags.command->get_option(option)->as<std::string>());
    }
  }
  for (const char* flag : {"--json", "--explain", "--plain"}) {
    if (flags.given(flag)) command += std::string(" ") + flag;
  }
  return command;
}

// The run's config: the flags over the model's defaults, or over a resumed run's saved config.
train::TrainConfig config_of(const TrainFlags& flags, const train::Checkpoint* saved) {
  GROVE_CHECK(!flags.resume || !flags.checkpoint.empty(),
              "--resume needs --checkpoint PATH (the checkpoint to go on from)");
  train::TrainConfig config;
  if (saved != nullptr) {
    config = saved->config;
    GROVE_CHECK(!flags.given("--model") || flags.model == config.model, "--model ", flags.model,
                ": the checkpoint holds a ", config.model, " model");
  } else {
    config = train::defaults_for(flags.model);
  }
  const zoo::ModelSpec& spec = zoo::model_spec(config.model);
  GROVE_CHECK(spec.task_spec().trains_in_epochs || !flags.given("--epochs"), "--epochs ",
              flags.epochs, ": the ", config.model,
              " trains for a number of steps, not passes over its corpus; give --steps (",
              spec.defaults.steps, " by default) instead");
  apply_flags(flags, config, saved != nullptr);
  config.validate();
  return config;
}

// This process's command line as it was started (for the launcher's copies of it).
std::vector<std::string> own_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> words;
  for (std::string word; std::getline(in, word, '\0');) words.push_back(word);
  return words;
}

// --nproc N without the process-group variables: start the N ranks and wait for the job.
int launch_ranks(const TrainFlags& flags, const train::TrainConfig& config) {
  if (config.device.is_cuda()) {
    GROVE_CHECK(dist::has_nccl(), "--nproc ", flags.nproc,
                " on cuda needs NCCL, and this build has none; build grove with NCCL (see the "
                "README), or train on --device cpu");
    GROVE_CHECK(flags.nproc <= cuda_device_count(), "--nproc ", flags.nproc,
                " on cuda starts one process per GPU, but this host has ", cuda_device_count(),
                " GPU(s); use --nproc ", cuda_device_count(), " or fewer");
  } else {
    GROVE_CHECK(dist::has_gloo(), "--nproc ", flags.nproc,
                " on the cpu needs Gloo, and this build has none: install libgloo-dev "
                "(scripts/install_deps.sh) and rebuild");
  }
  dist::LaunchOptions launch;
  launch.nproc = static_cast<int>(flags.nproc);
  launch.argv = {dist::current_executable()};
  const std::vector<std::string> words = own_command_line();
  for (std::size_t i = 1; i < words.size(); ++i) {
    if (words[i] == "--nproc") {
      ++i;  // and its value
    } else if (words[i].rfind("--nproc=", 0) != 0) {
      launch.argv.push_back(words[i]);
    }
  }
  // The ranks handle Ctrl-C themselves (they agree to stop and rank 0 saves a checkpoint).
  const CtrlCScope ranks_handle_it(CtrlC::Ignore);
  return dist::launch_local(launch);
}

// An ostream that drops everything: the output of ranks other than 0.
std::ostream& nowhere() {
  static std::ostream stream(nullptr);
  return stream;
}

int run_train(const TrainFlags& flags) {
  std::optional<train::Checkpoint> saved;
  if (flags.resume && !flags.checkpoint.empty()) saved = train::read_checkpoint(flags.checkpoint);
  train::TrainConfig config = config_of(flags, saved ? &*saved : nullptr);
  // Before anything runs: a run must not fail at its end for want of a place to write.
  if (!flags.checkpoint.empty()) prepare_output_file(flags.checkpoint, "--checkpoint");

  // Data parallel: launch the ranks, or (a rank) join the group.
  const bool is_rank = std::getenv("GROVE_WORLD_SIZE") != nullptr;
  if (flags.nproc > 1 && !is_rank) return launch_ranks(flags, config);
  struct GroupGuard {
    bool active = false;
    ~GroupGuard() {
      if (active) dist::destroy_process_group();
    }
  } group_guard;
  if (is_rank) {
    dist::ProcessGroupOptions options = dist::ProcessGroupOptions::from_environment();
    options.cuda = config.device.is_cuda();
    if (options.cuda) config.device = cuda(options.local_rank);  // one GPU per process
    dist::init_process_group(options);
    group_guard.active = true;
  }
  const bool leader = !is_rank || dist::default_process_group().rank() == 0;
  std::ostream& err = leader ? std::cerr : nowhere();
  // The effective configuration beside the checkpoint, for `grove train --config` (one writer).
  if (!flags.checkpoint.empty() && leader) write_config_file(flags.checkpoint, config);
  // Note [Threads on a shared machine]
  const ThreadChoice threads = choose_threads(
      flags.given("--threads") ? std::optional<std::int64_t>(flags.threads) : std::nullopt);
  apply_threads(threads);

  train::Trainer trainer(config);
  if (saved) train::restore_checkpoint(trainer, *saved);
  const bool terminal = !flags.plain && isatty(fileno(stderr)) != 0;
  err << describe(trainer.config(), trainer);
  if (trainer.world_size() > 1) {
    err << "; " << trainer.world_size() << " processes, each on batches of " << config.batch_size;
  }
  err << "\ncpu kernels: " << threads.describe() << "\n";
  if (trainer.spec().task_spec().data == zoo::DataKind::TextCorpus) {
    const data::TextCorpus& corpus = trainer.corpus();
    err << "corpus: " << corpus.size()
        << (corpus.is_text ? " characters from " + std::to_string(corpus.paths.size()) + " files ("
                           : " tokens of a token file, ids up to " +
                                 std::to_string(corpus.vocab_needed - 1) + " (")
        << corpus.train.numel() << " to train on, " << corpus.validation.numel()
        << " to validate); unigram entropy " << format_number(data::unigram_entropy(corpus.train))
        << " nats\n";
  }
  if (saved && (config.epochs != saved->config.epochs || config.steps != saved->config.steps) &&
      config.schedule != "constant") {
    err << "note: another length than the saved run's stretches its " << config.schedule
        << " schedule from here on; the run no longer continues the saved one exactly\n";
  }
  if (saved) {
    err << "resuming from " << flags.checkpoint << " at step " << trainer.steps_done() << "\n";
  }

  std::optional<MetricsWriter> metrics;
  if (!flags.metrics.empty() && leader) metrics.emplace(flags.metrics, /*append=*/flags.resume);
  ProgressOptions progress_options;
  progress_options.is_terminal = terminal;
  progress_options.total_steps = trainer.total_steps();
  progress_options.steps_per_epoch =
      trainer.spec().task_spec().trains_in_epochs ? trainer.batches_per_epoch() : 0;
  progress_options.start_step = trainer.steps_done();
  Progress progress(err, progress_options);

  auto save = [&](const char* why) {
    if (flags.checkpoint.empty() || !leader) return;
    train::save_checkpoint(trainer, flags.checkpoint);
    progress.message(std::string("checkpoint (") + why + "): " + flags.checkpoint + " at step " +
                     std::to_string(trainer.steps_done()));
  };
  // A step's metrics row waits for the evaluation that may follow it (its last three columns):
  // written when the next step or evaluation comes, and at the end of the run.
  std::optional<MetricsRow> pending_row;
  const auto write_pending = [&] {
    if (metrics && pending_row) metrics->write(*pending_row);
    pending_row.reset();
  };
  train::Callbacks callbacks;
  callbacks.on_step = [&](const train::StepReport& step) {
    const double samples_per_s = step.step_ms > 0 ? step.samples * 1e3 / step.step_ms : 0.0;
    progress.update({.step = step.step,
                     .total_steps = step.total_steps,
                     .epoch = 0,
                     .epochs = 0,
                     .loss = step.loss,
                     .lr = step.lr,
                     .samples_per_s = samples_per_s});
    if (metrics) {
      write_pending();
      pending_row = MetricsRow{.step = step.step,
                               .epoch = step.epoch,
                               .loss = step.loss,
                               .lr = step.lr,
                               .step_time_ms = step.step_ms,
                               .samples_per_s = samples_per_s};
    }
  };
  callbacks.on_eval = [&](const train::EvalReport& eval) {
    progress.message(describe_eval(config.model, eval));
    // Into its step's row; an evaluation without one (before any step, or a second one after
    // the same step) is in the program's output only: a file never has two rows for one step.
    if (!pending_row || pending_row->step != eval.step) return;
    for (const zoo::Metric metric : trainer.spec().task_spec().metrics) {
      const double value = eval.metric(metric);
      switch (metric) {
        case zoo::Metric::ValLoss:
          pending_row->val_loss = value;
          break;
        case zoo::Metric::TestLoss:
          pending_row->test_loss = value;
          break;
        case zoo::Metric::TestAccuracy:
          pending_row->test_accuracy = value;
          break;
      }
    }
    write_pending();
  };
  callbacks.should_stop = [] { return ctrl_c_requested(); };
  if (flags.checkpoint_every > 0 && !flags.checkpoint.empty()) {
    callbacks.save_every = flags.checkpoint_every;
    callbacks.save = [&] { save("every"); };
  }

  train::TrainResult result;
  {
    const CtrlCScope ctrl_c(CtrlC::Flag);
    result = trainer.run(callbacks);
  }
  write_pending();
  progress.finish();

  // Stopped early by Ctrl-C (a Ctrl-C during the last evaluation still ends the run as done).
  if (ctrl_c_requested() && trainer.steps_done() < trainer.total_steps()) {
    if (flags.checkpoint.empty()) {
      const std::string path = config.model + "-interrupted.safetensors";
      if (leader) train::save_checkpoint(trainer, path);
      err << "interrupted at step " << trainer.steps_done() << "; saved " << path
          << "\nresume with: " << resume_command(flags, path) << "\n";
    } else {
      save("interrupted");
      err << "interrupted at step " << trainer.steps_done()
          << "\nresume with: " << resume_command(flags, flags.checkpoint) << "\n";
    }
    return 130;
  }
  // A run resumed from the checkpoint Ctrl-C saved without --checkpoint ("gpt-interrupted")
  // ends under the model's plain name: finished, it is no longer interrupted. The interrupted
  // file goes once the final one is written; a file of that name already there is never
  // overwritten (the checkpoint keeps its name then).
  const std::filesystem::path given(flags.checkpoint);
  const std::filesystem::path finished =
      given.parent_path() / (config.model + std::string(".safetensors"));
  if (flags.resume && leader && given.filename() == config.model + "-interrupted.safetensors" &&
      !std::filesystem::exists(finished)) {
    train::save_checkpoint(trainer, finished.string());
    std::filesystem::remove(given);
    progress.message("checkpoint (end): " + finished.string() + " at step " +
                     std::to_string(trainer.steps_done()) + "; the run is complete, so " +
                     given.string() + " is gone");
  } else {
    save("end");
  }
  const RunSummary summary = summarize(trainer, result);
  err << summary.to_text();
  if (flags.json && leader) std::cout << summary.to_json() << std::endl;
  return 0;
}

// A default per model for --help, from the registry: the models (of those `applies` keeps) with
// the same value share it, in the table's order: "mlp, cnn 0.1; gpt 0.0003".
std::string per_model(
    const std::function<std::string(const zoo::ModelSpec&)>& value_of,
    const std::function<bool(const zoo::ModelSpec&)>& applies = [](const zoo::ModelSpec&) {
      return true;
    }) {
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;  // value -> names
  for (const zoo::ModelSpec& spec : zoo::model_specs()) {
    if (!applies(spec)) continue;
    const std::string value = value_of(spec);
    auto group = std::find_if(groups.begin(), groups.end(),
                              [&](const auto& entry) { return entry.first == value; });
    if (group == groups.end()) group = groups.insert(groups.end(), {value, {}});
    group->second.emplace_back(spec.name);
  }
  std::string text;
  for (const auto& [value, names] : groups) {
    if (!text.empty()) text += "; ";
    text += zoo::join_names(names, ", ", ", ") + " " + value;
  }
  return text;
}

bool counts_epochs(const zoo::ModelSpec& spec) {
  return spec.task_spec().trains_in_epochs;
}

bool uses_sgd(const zoo::ModelSpec& spec) {
  return std::string_view(spec.defaults.optimizer) == "sgd";
}

// --data's help: what each task's data is, with the models that read it, in the table's order:
// "a Fashion-MNIST directory (mlp, cnn) or a text file (gpt)".
std::string data_help() {
  std::vector<std::pair<zoo::TaskKind, std::vector<std::string>>> tasks;  // task -> names
  for (const zoo::ModelSpec& spec : zoo::model_specs()) {
    auto task = std::find_if(tasks.begin(), tasks.end(),
                             [&](const auto& entry) { return entry.first == spec.task; });
    if (task == tasks.end()) task = tasks.insert(tasks.end(), {spec.task, {}});
    task->second.emplace_back(spec.name);
  }
  std::vector<std::string> parts;
  for (const auto& [kind, names] : tasks) {
    parts.push_back(std::string(zoo::task_spec(kind).data_help) + " (" +
                    zoo::join_names(names, ", ", ", ") + ")");
  }
  return zoo::join_names(parts);
}

}  // namespace

void add_train_command(CLI::App& app, OnParse on_parse) {
  auto flags = std::make_shared<TrainFlags>();
  const std::vector<std::string> models = zoo::model_names();
  CLI::App* command =
      app.add_subcommand("train", "train a model (" + zoo::join_names(models, ", ", ", ") + ")");
  flags->command = command;
  // --help ends with each model and its one-line summary, names padded to a column.
  std::string footer = "Models (--model):";
  for (const zoo::ModelSpec& spec : zoo::model_specs()) {
    std::string name = spec.name;
    name.resize(std::max<std::size_t>(name.size() + 1, 8), ' ');
    footer += "\n  " + name + spec.summary;
  }
  command->footer(footer);
  command->add_option("--model", flags->model, zoo::join_names(models, " | ", " | "))
      ->check(CLI::IsMember(models));
  std::string presets;  // the configurable models' presets, for the help text
  for (const zoo::ModelSpec& spec : zoo::model_specs()) {
    if (spec.preset_help == nullptr) continue;
    for (const std::string& line : spec.preset_help()) presets += "\n    " + line;
  }
  command
      ->add_option("--preset", flags->shape.preset,
                   "gpt: a named shape to start from (default tiny):" + presets)
      ->type_name("NAME");
  command->add_option("--layers", flags->shape.layers, "gpt: transformer blocks")
      ->check(CLI::PositiveNumber);
  command->add_option("--heads", flags->shape.heads, "gpt: attention heads (divide --embd)")
      ->check(CLI::PositiveNumber);
  command->add_option("--embd", flags->shape.embd, "gpt: embedding width")
      ->check(CLI::PositiveNumber);
  command->add_option("--block", flags->shape.block, "gpt: context length")
      ->check(CLI::PositiveNumber);
  command->add_option("--dropout", flags->shape.dropout, "gpt: residual and embedding dropout")
      ->check(CLI::Range(0.0, 0.999999));
  command->add_flag("--tie-weights", flags->tie_weights,
                    "gpt: the head is the token embedding (GPT-2's weight tying)");
  command->add_option("--device", flags->device, "cpu | cuda | cuda:N (default: cuda if present)");
  command->add_option("--mode", flags->mode, "eager | graphed (the whole step as one graph)")
      ->check(CLI::IsMember({"eager", "graphed"}));
  command
      ->add_option("--precision", flags->precision,
                   "fp32 | bf16 | fp16: the dtype the step computes in (bf16, fp16: autocast, "
                   "float32 master weights; fp16 scales the loss). Default: bf16 on a GPU with "
                   "bf16 tensor cores, else fp32")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}));
  const auto number = [](double value) { return format_number(value); };
  command
      ->add_option("--epochs", flags->epochs,
                   "passes over the data (" +
                       per_model([&](const auto& spec) { return number(spec.defaults.epochs); },
                                 counts_epochs) +
                       ")")
      ->check(count_flag());
  command
      ->add_option("--steps", flags->steps,
                   "stop after N steps (the length of models that count steps: " +
                       per_model([&](const auto& spec) { return number(spec.defaults.steps); },
                                 [](const auto& spec) { return !counts_epochs(spec); }) +
                       ")")
      ->check(count_flag());
  command
      ->add_option("--batch-size", flags->batch_size,
                   "samples per step (" + per_model([&](const auto& spec) {
                     return number(spec.defaults.batch_size);
                   }) + ")")
      ->check(count_flag());
  command->add_option("--lr", flags->lr, "learning rate (" + per_model([&](const auto& spec) {
                                           return number(spec.defaults.lr);
                                         }) + ")");
  command->add_option("--optimizer", flags->optimizer, "sgd | adamw")
      ->check(CLI::IsMember({"sgd", "adamw"}));
  command->add_option(
      "--momentum", flags->momentum,
      "sgd momentum (" +
          per_model([&](const auto& spec) { return number(spec.defaults.momentum); }, uses_sgd) +
          ")");
  command->add_option("--weight-decay", flags->weight_decay,
                      "weight decay (" + per_model([&](const auto& spec) {
                        return number(spec.defaults.weight_decay);
                      }) + ")");
  command->add_option("--schedule", flags->schedule, "constant | cosine | step")
      ->check(CLI::IsMember({"constant", "cosine", "step"}));
  command->add_option("--warmup-steps", flags->warmup_steps, "cosine: linear warm-up steps")
      ->check(count_flag());
  command->add_option("--clip-grad-norm", flags->clip, "clip gradients to this global norm");
  command->add_option("--seed", flags->seed, "initialisation, data order and sampling (0)")
      ->check(seed_flag());
  command->add_option("--data", flags->data, data_help());
  command->add_option("--train-limit", flags->train_limit, "train on the first N samples")
      ->check(count_flag());
  command->add_option("--test-limit", flags->test_limit, "evaluate on the first N samples")
      ->check(count_flag());
  command->add_option("--checkpoint", flags->checkpoint,
                      "checkpoint file (safetensors), written at the end and on Ctrl-C");
  command->add_option("--checkpoint-every", flags->checkpoint_every, "also every N steps")
      ->check(count_flag());
  command->add_flag("--resume", flags->resume, "go on from --checkpoint");
  command->add_option("--metrics", flags->metrics, "CSV file: one row per step");
  command
      ->add_option("--read-every", flags->read_every,
                   "steps between reads of the losses from the device (cpu 1, cuda 50)")
      ->check(count_flag());
  command->add_flag("--json", flags->json, "print one JSON line of results at the end");
  command->add_flag("--explain", flags->explain, "narrate graphed mode's decisions");
  command->add_flag("--plain", flags->plain, "plain progress lines even on a terminal");
  command
      ->add_option("--nproc", flags->nproc,
                   "train data-parallel in N processes on this host (cuda: one GPU each; "
                   "--batch-size is per process)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1024}));
  command
      ->add_option("--threads", flags->threads,
                   "threads of the CPU kernels (default: GROVE_NUM_THREADS, OMP_NUM_THREADS, or "
                   "the cores idle when the run starts)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1024}));
  if (on_parse == OnParse::CheckFlags) {
    command->callback([flags] { config_of(*flags, nullptr); });
    return;
  }
  command->callback([flags] {
    const int code = run_train(*flags);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace grove::program
