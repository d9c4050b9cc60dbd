// The zoo GPT's training step at the sizes where compute matters, timed as
// ../shared/anchors/pytorch_scale_bench.py times PyTorch (run both in one call and compare):
//
//   presets (vocab, block, layers, heads, embd, batch; steps per timed run):
//     char  : 65,    256,  6,  6, 384, 64; 30   nanoGPT's shakespeare-char shape, 10.8M params
//     gpt2s : 50304, 1024, 12, 12, 768, 8; 10   GPT-2 small's shape, the head tied to the token
//                                               embedding (124.5M parameters, as the anchor's
//                                               and llm.c's)
//   modes:
//     fp32, bf16, fp16           eager train::TrainStep in that precision (bf16, fp16:
//                                autocast, Note [Autocast] in ops/autocast.h; fp16 with the
//                                loss scaler); TF32 off
//     fp32-graph, bf16-graph,    the whole step compiled and replayed as one graph
//     fp16-graph                 (train::Mode::Graphed)
//
// Random tokens, AdamW lr 3e-4, weight decay 0.01, as the anchor. Per (preset, mode): 5 warm-up
// steps, then 5 timed runs of `steps` steps queued back to back with one wait each; prints one
// JSON line: ms_per_step (the median run), min_ms, tokens_per_s, params_M, peak_MiB (the
// device allocator's peak allocated bytes since the model was built, warm-up included, as the
// anchor's max_memory_allocated). Not a test: it asserts nothing.
//
//   ./build/bench/cuda_gpt_scale_bench [presets] [modes]    e.g.  char,gpt2s bf16,bf16-graph
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <sstream>
#include <string>
#include <vector>

#include "core/caching_allocator.h"
#include "core/device.h"
#include "core/rng.h"
#include "core/stream.h"
#include "graphs/tree/tree_manager.h"
#include "models/optim/adamw.h"
#include "models/train/config.h"
#include "models/train/step.h"
#include "models/zoo/gpt.h"
#include "ops/random.h"

namespace grove {
namespace {

struct Preset {
  std::string name;
  zoo::GptConfig config;
  std::int64_t batch;
  int steps;  // per timed run
};

const std::vector<Preset>& presets() {
  static const std::vector<Preset> all = {
      {"char", {.vocab = 65, .block = 256, .layers = 6, .heads = 6, .embd = 384}, 64, 30},
      {"gpt2s",
       {.vocab = 50304, .block = 1024, .layers = 12, .heads = 12, .embd = 768, .tie_weights = true},
       8,
       10},
  };
  return all;
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) parts.push_back(part);
  return parts;
}

std::string run(const Preset& preset, const std::string& mode) {
  const Device device = cuda(0);
  CachingAllocator& allocator = allocator_for(device);
  manual_seed(0);
  zoo::Gpt model(preset.config);
  model.to(device);
  std::int64_t params = 0;
  for (const Tensor& p : model.parameters()) params += p.numel();
  optim::AdamwOptions options;
  options.lr = 3e-4;
  options.weight_decay = 0.01;
  optim::AdamW optimizer(model.parameters(), options);
  train::TrainConfig config;
  config.model = "gpt";
  config.precision = train::parse_precision(mode.substr(0, 4));
  config.mode = mode.ends_with("-graph") ? train::Mode::Graphed : train::Mode::Eager;
  train::TrainStep step(model, optimizer, config);
  Generator generator(0);
  const std::int64_t block = preset.config.block;
  const Tensor x = ops::randint(0, preset.config.vocab, {preset.batch, block}, &generator, device);
  const Tensor y = ops::randint(0, preset.config.vocab, {preset.batch, block}, &generator, device);
  const Stream stream = current_stream(device);
  for (int i = 0; i < 5; ++i) step(x, y);
  synchronize(stream);
  std::vector<double> per_step_ms;
  for (int r = 0; r < 5; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < preset.steps; ++i) step(x, y);
    synchronize(stream);
    const std::chrono::duration<double, std::milli> elapsed =
        std::chrono::steady_clock::now() - start;
    per_step_ms.push_back(elapsed.count() / preset.steps);
  }
  std::vector<double> sorted = per_step_ms;
  std::sort(sorted.begin(), sorted.end());
  const double ms = sorted[2];
  const double loss = step(x, y).item<double>();
  char line[512];
  std::snprintf(line, sizeof(line),
                "{\"preset\": \"%s\", \"mode\": \"%s\", \"ms_per_step\": %.3f, \"min_ms\": %.3f, "
                "\"tokens_per_s\": %.0f, \"params_M\": %.2f, \"peak_MiB\": %.1f, \"loss\": %.4f}",
                preset.name.c_str(), mode.c_str(), ms, sorted[0],
                static_cast<double>(preset.batch * block) / ms * 1e3,
                static_cast<double>(params) / 1e6,
                static_cast<double>(allocator.stats().peak_allocated_bytes) / (1 << 20), loss);
  return line;
}

}  // namespace
}  // namespace grove

int main(int argc, char** argv) {
  using namespace grove;
  if (!cuda_is_available()) {
    std::fprintf(stderr, "cuda_gpt_scale_bench: no CUDA device\n");
    return 0;
  }
  const std::vector<std::string> names = split(argc > 1 ? argv[1] : "char,gpt2s");
  const std::vector<std::string> modes = split(argc > 2 ? argv[2] : "fp32,bf16,bf16-graph");
  for (const std::string& name : names) {
    const auto preset = std::find_if(presets().begin(), presets().end(),
                                     [&](const Preset& p) { return p.name == name; });
    if (preset == presets().end()) {
      std::fprintf(stderr, "unknown preset '%s' (char, gpt2s)\n", name.c_str());
      return 2;
    }
    for (const std::string& mode : modes) {
      try {
        std::printf("%s\n", run(*preset, mode).c_str());
      } catch (const std::exception& e) {
        std::printf("{\"preset\": \"%s\", \"mode\": \"%s\", \"error\": \"%s\"}\n", name.c_str(),
                    mode.c_str(), e.what());
      }
      std::fflush(stdout);
      graphs::tree_manager(cuda(0)).reset_trees();  // this case's recordings and pool
      allocator_for(cuda(0)).empty_cache();
      allocator_for(cuda(0)).reset_peak_stats();
    }
  }
  return 0;
}
