// The `grove` program's commands. Each add_*_command registers a CLI11 subcommand on the
// program's app with its options and the code that runs it; main.cpp puts them together.
// A command reports a user's mistake (bad flag values, missing files, a checkpoint of another
// model) as a grove::Error; main prints it, as it prints CLI11's parse errors, as one line and
// exits with 2. A command that must end with another status throws CLI::RuntimeError(status)
// (130 after Ctrl-C).
#pragma once

#include <CLI/CLI.hpp>

#include "core/device.h"

namespace grove::program {

void add_train_command(CLI::App& app);
void add_eval_command(CLI::App& app);
void add_sample_command(CLI::App& app);
void add_plot_command(CLI::App& app);
void add_info_command(CLI::App& app);
void add_demo_command(CLI::App& app);

// "cpu", "cuda" (device 0) or "cuda:N"; errors say which devices exist.
Device parse_device(const std::string& text);
// cuda when a device is present, else cpu.
std::string default_device_text();
std::string device_text(Device device);

}  // namespace grove::program
