// `grove plot`, `grove info` and `grove demo`: a metrics file drawn as SVG; what this build of
// grove has and which devices it sees; the printed tour of the core layer.
#include <zlib.h>

#include <CLI/Version.hpp>
#include <Eigen/Core>
#include <iostream>
#include <nlohmann/json.hpp>

#include "core/caching_allocator.h"
#include "core/error.h"
#include "dist/backend_versions.h"
#include "models/program/commands.h"
#include "models/program/core_demo.h"
#include "models/program/device_info.h"
#include "models/program/plot.h"
#include "models/program/threads.h"
#include "ops/backend_versions.h"

namespace grove::program {

void add_plot_command(CLI::App& app, OnParse on_parse) {
  auto csv = std::make_shared<std::string>();
  auto svg = std::make_shared<std::string>("curve.svg");
  auto title = std::make_shared<std::string>();
  auto log_loss = std::make_shared<bool>(false);
  CLI::App* command =
      app.add_subcommand("plot", "draw a metrics CSV (grove train --metrics) as an SVG");
  command->add_option("metrics", *csv, "the CSV file")->required();
  command->add_option("-o,--output", *svg, "the SVG to write (curve.svg)");
  command->add_option("--title", *title, "the plot's title (default: the CSV's name)");
  command->add_flag("--log", *log_loss, "the loss on a logarithmic axis");
  // The callback owns the flags' storage (CLI11 keeps references to it), so it is set in both
  // modes; checking the flags is CLI11's alone.
  command->callback([=] {
    if (on_parse == OnParse::CheckFlags) return;
    PlotOptions options;
    options.title = title->empty() ? std::filesystem::path(*csv).filename().string() : *title;
    options.log_loss = *log_loss;
    write_plot(*csv, *svg, options);
    std::cerr << "wrote " << *svg << "\n";
  });
}

void add_info_command(CLI::App& app, OnParse on_parse) {
  CLI::App* command =
      app.add_subcommand("info", "build options, devices with memory, library versions");
  if (on_parse == OnParse::CheckFlags) return;
  command->callback([] {
    std::cout << "grove\n"
              << "  build: " << GROVE_BUILD_TYPE << ", CPU target -march=" << GROVE_MARCH_TEXT
              << ", CUDA backend " << (GROVE_CUDA_BUILT ? "on" : "off") << "\n"
              << "  libraries: Eigen " << EIGEN_WORLD_VERSION << "." << EIGEN_MAJOR_VERSION << "."
              << EIGEN_MINOR_VERSION << ", zlib " << zlibVersion() << ", CLI11 " << CLI11_VERSION
              << ", nlohmann-json " << NLOHMANN_JSON_VERSION_MAJOR << "."
              << NLOHMANN_JSON_VERSION_MINOR << "." << NLOHMANN_JSON_VERSION_PATCH << "\n";
    for (const std::string& line : cuda_library_lines()) std::cout << "  " << line << "\n";
    std::cout << "backends:\n";
    for (const std::string& line : ops::backend_versions()) std::cout << "  " << line << "\n";
    for (const std::string& line : dist::backend_versions()) std::cout << "  " << line << "\n";
    std::cout << "devices:\n  cpu: " << cpu_description() << "\n"
              << "  cpu kernels: " << choose_threads(std::nullopt).describe() << "\n";
    for (const std::string& line : cuda_device_lines()) std::cout << "  " << line << "\n";
  });
}

void add_demo_command(CLI::App& app, OnParse on_parse) {
  CLI::App* command = app.add_subcommand(
      "demo", "a tour of the core layer: allocate, view, capture and replay on the CPU stream");
  if (on_parse == OnParse::CheckFlags) return;
  command->callback([] {
    const int code = models::run_core_demo(std::cout);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace grove::program
