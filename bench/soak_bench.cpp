// soak_bench: many graphed training steps of the reference models, with the memory figures at
// chosen steps as a table, to show that nothing grows after warm-up (bench/soak_runner.h says
// what a step is and what each figure means). Not a Google Benchmark suite and not timed: a
// plain program that runs the same loop as the soak test (tests/graphs/soak_test.cpp), at the
// real shapes and on any device.
//
//   soak_bench [--model mlp|gpt|all] [--device cpu|cuda] [--mode graphed-step|graphed|all]
//              [--steps N] [--small]
//   defaults:  all models, cpu, all modes, 10000 steps, the real shapes
//
// Prints one table per (model, mode) with rows at steps 1, 100, 1,000 and 10,000 (those not
// past --steps, and the last step), then whether every memory figure stayed equal from step 100
// on (soak::growth). Exits 1 if something grew (or a run failed), 0 otherwise. For a GPU (a
// CUDA build):
//   ./build/bench/soak_bench --device cuda
//
// Measured 2026-11-27, one H200 (Release, CUDA build), real shapes, 10,000 steps; bytes at
// steps 100 = 1,000 = 10,000 (allocated | reserved | graph pool, its segments):
//   mlp graphed-step   4,716,544 |  12,582,912 |   4,194,304,  2
//   mlp graphed        3,637,760 |  12,582,912 |   4,194,304,  2
//   gpt graphed-step  92,236,800 | 610,271,232 | 180,355,072, 32
//   gpt graphed       51,149,312 | 635,437,056 | 205,520,896, 35
// Every step after the fourth a replay, no recording, warm-up or fallback after step 100; the
// host heap flat within glibc's noise. The one change: gpt graphed's blocks 344 -> 345 between
// steps 100 and 1,000 (free space split differently; allocated blocks and every byte count the
// same), 345 again at 10,000.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "bench/soak_runner.h"

namespace {

using namespace grove;

struct Arguments {
  std::vector<std::string> models = {"mlp", "gpt"};
  std::vector<soak::SoakMode> modes = {soak::SoakMode::GraphedStep, soak::SoakMode::Graphed};
  Device device = kCPU;
  std::int64_t steps = 10000;
  bool small = false;
};

[[noreturn]] void usage(const std::string& problem) {
  std::fprintf(stderr,
               "soak_bench: %s\nusage: soak_bench [--model mlp|gpt|all] [--device cpu|cuda] "
               "[--mode graphed-step|graphed|all] [--steps N] [--small]\n",
               problem.c_str());
  std::exit(2);
}

Arguments parse(int argc, char** argv) {
  Arguments arguments;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--small") {
      arguments.small = true;
      continue;
    }
    if (i + 1 >= argc) usage("expected a value after " + flag);
    const std::string value = argv[++i];
    if (flag == "--model") {
      if (value == "all") continue;
      if (value != "mlp" && value != "gpt") usage("unknown model '" + value + "'");
      arguments.models = {value};
    } else if (flag == "--device") {
      if (value == "cpu") {
        arguments.device = kCPU;
      } else if (value == "cuda") {
        arguments.device = cuda(0);
      } else {
        usage("unknown device '" + value + "'");
      }
    } else if (flag == "--mode") {
      if (value == "graphed-step") {
        arguments.modes = {soak::SoakMode::GraphedStep};
      } else if (value == "graphed") {
        arguments.modes = {soak::SoakMode::Graphed};
      } else if (value != "all") {
        usage("unknown mode '" + value + "'");
      }
    } else if (flag == "--steps") {
      arguments.steps = std::atoll(value.c_str());
      if (arguments.steps < 1) usage("--steps needs a positive number");
    } else {
      usage("unknown flag " + flag);
    }
  }
  return arguments;
}

}  // namespace

int main(int argc, char** argv) {
  const Arguments arguments = parse(argc, argv);
  if (arguments.device.is_cuda() && !cuda_is_available()) {
    std::fprintf(stderr, "soak_bench: no CUDA device\n");
    return 2;
  }
  bool all_flat = true;
  for (const std::string& model : arguments.models) {
    for (const soak::SoakMode mode : arguments.modes) {
      soak::SoakConfig config;
      config.model = model;
      config.device = arguments.device;
      config.mode = mode;
      config.steps = arguments.steps;
      config.small = arguments.small;
      std::vector<std::int64_t> at;
      for (std::int64_t step : {1, 100, 1000, 10000}) {
        if (step < config.steps) at.push_back(step);
      }
      at.push_back(config.steps);
      config.sample_at = at;
      std::printf("soak: %s, %s, %s, %lld steps%s\n", model.c_str(), soak::soak_mode_name(mode),
                  arguments.device.to_string().c_str(), static_cast<long long>(config.steps),
                  config.small ? " (small shapes)" : "");
      std::vector<soak::MemoryFigures> samples;
      try {
        samples = soak::run_soak(config);
      } catch (const std::exception& error) {
        std::printf("  failed: %s\n\n", error.what());
        all_flat = false;
        continue;
      }
      std::printf("%s", soak::format_table(samples).c_str());
      // From step 100 on (or the first sample, for a short run) nothing may grow.
      const soak::MemoryFigures& after_warmup = samples.size() > 1 ? samples[1] : samples[0];
      const std::string grew = soak::growth(after_warmup, samples.back());
      std::printf("  from step %lld to %lld: %s\n\n", static_cast<long long>(after_warmup.step),
                  static_cast<long long>(samples.back().step),
                  grew.empty() ? "flat" : ("GREW: " + grew).c_str());
      if (soak::free_layout_changed(after_warmup, samples.back())) {
        std::printf(
            "  (the free space is split differently: %zu -> %zu blocks, %zu -> %zu in the "
            "graph pool; no byte more reserved or allocated)\n\n",
            after_warmup.blocks, samples.back().blocks, after_warmup.pool_blocks,
            samples.back().pool_blocks);
      }
      all_flat = all_flat && grew.empty();
    }
  }
  return all_flat ? 0 : 1;
}
