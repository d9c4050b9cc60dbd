// `grove eval` and `grove sample`: what a checkpoint's model does. eval evaluates it as the
// training run did (its task's metrics: test accuracy and loss for an image classifier,
// validation loss and a sample for a language model); sample continues a prompt with a model
// whose registry spec can generate text (the gpt).
#include <iostream>

#include "core/error.h"
#include "models/checkpoint/safetensors.h"
#include "models/data/text_corpus.h"
#include "models/program/commands.h"
#include "models/program/flag_checks.h"
#include "models/program/run_summary.h"
#include "models/program/threads.h"
#include "models/train/checkpoint.h"
#include "models/train/trainer.h"
#include "models/zoo/registry.h"
#include "ops/autocast.h"

#include <nlohmann/json.hpp>

namespace grove::program {
namespace {

struct EvalFlags {
  std::string checkpoint, device, data, save_logits;
  std::int64_t logits_count = 256;
  bool json = false;
  CLI::App* command = nullptr;
};

// The flags' checks that need no file: the device exists, the count is positive.
Device check_eval_flags(const EvalFlags& flags) {
  GROVE_CHECK(flags.logits_count >= 1, "--logits-count: expected at least 1, got ",
              flags.logits_count);
  return parse_device(flags.device.empty() ? default_device_text() : flags.device);
}

int run_eval(const EvalFlags& flags) {
  apply_threads(choose_threads(std::nullopt));  // Note [Threads on a shared machine]
  const Device device = check_eval_flags(flags);
  // Before the evaluation: it must not fail at its end for want of a place to write.
  if (!flags.save_logits.empty()) prepare_output_file(flags.save_logits, "--save-logits");
  const train::Checkpoint saved = train::read_checkpoint(flags.checkpoint);
  train::TrainConfig config = saved.config;
  config.device = device;
  config.mode = train::Mode::Eager;
  if (!flags.data.empty()) config.data = flags.data;
  train::Trainer trainer(config);
  train::restore_checkpoint(trainer, saved, /*restore_position=*/false);
  train::EvalReport report = trainer.evaluate();
  report.step = saved.position.steps_done;
  report.epoch =
      std::max<std::int64_t>(0, saved.position.epoch - (saved.position.next_batch == 0 ? 1 : 0));
  std::cerr << "grove eval: " << config.model << " from " << flags.checkpoint << " (step "
            << report.step << ") on " << config.device.to_string() << "\n"
            << describe_eval(config.model, report) << "\n";
  if (!flags.save_logits.empty()) {
    const auto [inputs, logits] = trainer.inputs_and_logits(flags.logits_count);
    checkpoint::save_safetensors(flags.save_logits, {{"inputs", inputs}, {"logits", logits}},
                                 {{"grove.model", config.model}});
    std::cerr << "wrote the inputs and logits of " << inputs.size(0) << " samples to "
              << flags.save_logits << "\n";
  }
  if (flags.json) {
    nlohmann::ordered_json object = {{"model", config.model}, {"step", report.step}};
    for (const zoo::Metric metric : trainer.spec().task_spec().metrics) {
      object[zoo::metric_name(metric)] = report.metric(metric);
    }
    if (trainer.spec().can_sample()) object["sample"] = report.sample;
    std::cout << object.dump() << std::endl;
  }
  return 0;
}

// The models whose specs can generate text: "gpt".
std::string sampling_models() {
  std::vector<std::string> names;
  for (const zoo::ModelSpec& spec : zoo::model_specs()) {
    if (spec.can_sample()) names.emplace_back(spec.name);
  }
  return zoo::join_names(names);
}

struct SampleFlags {
  std::string checkpoint, device, prompt = "\n";
  std::int64_t tokens = 200;
  double temperature = 0.8;
  std::uint64_t seed = 0;
};

// The flags' checks that need no file; returns the device.
Device check_sample_flags(const SampleFlags& flags) {
  GROVE_CHECK(!flags.prompt.empty(), "--prompt: expected at least one character");
  GROVE_CHECK(flags.tokens >= 1, "--tokens: expected at least 1, got ", flags.tokens);
  GROVE_CHECK(flags.temperature >= 0, "--temperature: expected >= 0, got ", flags.temperature);
  return parse_device(flags.device.empty() ? default_device_text() : flags.device);
}

int run_sample(const SampleFlags& flags) {
  apply_threads(choose_threads(std::nullopt));
  const Device device = check_sample_flags(flags);
  const train::Checkpoint saved = train::read_checkpoint(flags.checkpoint);
  const zoo::ModelSpec& spec = zoo::model_spec(saved.config.model);  // read_checkpoint checked it
  GROVE_CHECK(spec.can_sample(), "grove sample: ", flags.checkpoint, " holds a ",
              saved.config.model, " model; sampling text needs a ", sampling_models(),
              " checkpoint");
  std::shared_ptr<nn::Module> model = zoo::make_model(spec, saved.config.model_options);
  model->load_state_dict(saved.model);
  model->to(device);
  model->eval();
  Generator generator(flags.seed);
  const Tensor prompt = data::encode(flags.prompt);
  const AutocastGuard autocast(train::autocast_dtype(saved.config.precision));  // as it trained
  const Tensor text = spec.generate(*model, prompt.view({1, prompt.numel()}).to(device),
                                    flags.tokens, flags.temperature, generator);
  std::cout << data::decode(text.view({-1}).to(kCPU)) << std::endl;
  return 0;
}

}  // namespace

void add_eval_command(CLI::App& app, OnParse on_parse) {
  auto flags = std::make_shared<EvalFlags>();
  CLI::App* command = app.add_subcommand("eval", "evaluate a checkpoint's model");
  command->add_option("--checkpoint", flags->checkpoint, "a checkpoint of grove train")->required();
  command->add_option("--device", flags->device, "cpu | cuda | cuda:N (default: cuda if present)");
  command->add_option("--data", flags->data, "the data to evaluate on (default: the run's)");
  command->add_flag("--json", flags->json, "print one JSON line of results");
  command->add_option("--save-logits", flags->save_logits,
                      "write the inputs and the model's logits (safetensors) of the first test "
                      "samples, to compare with another framework");
  command->add_option("--logits-count", flags->logits_count, "how many samples (256)")
      ->check(count_flag());
  if (on_parse == OnParse::CheckFlags) {
    command->callback([flags] { check_eval_flags(*flags); });
  } else {
    command->callback([flags] { run_eval(*flags); });
  }
}

void add_sample_command(CLI::App& app, OnParse on_parse) {
  auto flags = std::make_shared<SampleFlags>();
  CLI::App* command =
      app.add_subcommand("sample", "generate text with a " + sampling_models() + " checkpoint");
  command
      ->add_option("--checkpoint", flags->checkpoint,
                   "a checkpoint of grove train --model " + sampling_models())
      ->required();
  command->add_option("--prompt", flags->prompt, "text to continue (default: a newline)");
  command->add_option("--tokens", flags->tokens, "characters to generate (200)")
      ->check(count_flag());
  command->add_option("--temperature", flags->temperature, "0: always the likeliest (0.8)");
  command->add_option("--seed", flags->seed, "sampling seed (0)")->check(seed_flag());
  command->add_option("--device", flags->device, "cpu | cuda | cuda:N (default: cuda if present)");
  if (on_parse == OnParse::CheckFlags) {
    command->callback([flags] { check_sample_flags(*flags); });
  } else {
    command->callback([flags] { run_sample(*flags); });
  }
}

}  // namespace grove::program
