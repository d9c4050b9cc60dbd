// The `grove` program's commands. Each add_*_command registers a CLI11 subcommand on the
// program's app with its options and the code that runs it; main.cpp puts them together.
// A command reports a user's mistake (bad flag values, missing files, a checkpoint of another
// model) as a grove::Error; main prints it, as it prints CLI11's parse errors, as one line and
// exits with 2. A command that must end with another status throws CLI::RuntimeError(status)
// (130 after Ctrl-C).
//
// Each command can also be added in OnParse::CheckFlags mode: parsing then ends with the checks
// of the flags' values that need no file, data or device work, and nothing runs. The argument
// fuzzer (tests/fuzz/args_fuzz.cpp) parses arbitrary command lines that way. In both modes a
// command's callback owns the storage of its flags, to which CLI11 keeps references.
#pragma once

#include <CLI/CLI.hpp>

#include "core/device.h"
#include "models/train/config.h"

namespace grove::program {

// What a command does once its flags are parsed: the program's work, or only the checks of the
// flags' values (a resumed run's checkpoint is not read; a device is checked for existence).
enum class OnParse { Run, CheckFlags };

void add_train_command(CLI::App& app, OnParse on_parse = OnParse::Run);
void add_eval_command(CLI::App& app, OnParse on_parse = OnParse::Run);
void add_sample_command(CLI::App& app, OnParse on_parse = OnParse::Run);
void add_plot_command(CLI::App& app, OnParse on_parse = OnParse::Run);
void add_info_command(CLI::App& app, OnParse on_parse = OnParse::Run);
void add_demo_command(CLI::App& app, OnParse on_parse = OnParse::Run);

// The program's command line: every command on `app` (a fresh one), exactly one required.
// app.parse(argc, argv) then runs the chosen command (or, in CheckFlags mode, checks its flags);
// it throws CLI::ParseError (CLI::CallForHelp for --help) for what CLI11 refuses, grove::Error
// for values a command refuses, and CLI::RuntimeError for a run that ends with another status.
inline void add_commands(CLI::App& app, OnParse on_parse = OnParse::Run) {
  app.require_subcommand(1);
  add_train_command(app, on_parse);
  add_eval_command(app, on_parse);
  add_sample_command(app, on_parse);
  add_plot_command(app, on_parse);
  add_info_command(app, on_parse);
  add_demo_command(app, on_parse);
}

// "cpu", "cuda" (device 0) or "cuda:N"; errors say which devices exist.
Device parse_device(const std::string& text);
// cuda when a device is present, else cpu.
std::string default_device_text();
// bf16 on a CUDA device with bf16 tensor cores, fp32 elsewhere (the CPU computes bf16 in float32
// and gains nothing from it).
train::Precision default_precision(Device device);
std::string device_text(Device device);

}  // namespace grove::program
