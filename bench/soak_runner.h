// The soak runner: many graphed training steps of a reference model, with the memory figures
// sampled at chosen steps, so that growth after warm-up shows. Header-only so that the soak
// test (tests/graphs/soak_test.cpp, small shapes on the CPU) and the soak tool
// (bench/soak_bench.cpp, real shapes on any device) run exactly the same loop.
//
// What a step is, as the trainer takes it (models/train/trainer.cpp's take_step):
//   - a fresh batch made on the device by random ops (a data loader's new tensors each step:
//     they are copied into the graphs' input buffers and die, churning the default pool);
//   - the schedule writes this step's learning rate into the optimizer's device tensor;
//   - the step, in one of the two graphed modes:
//       graphed-step: train::TrainStep in graphed mode, the whole step (zero_grad, forward, loss,
//                     backward, the optimizer's update) one compiled function, replayed as one
//                     graph (what `grove train --mode graphed` runs);
//       graphed:      the loss compiled with graphs::compile (a Forward and a Backward graph),
//                     loss.backward() through the compiled function's backward graph, zero_grad
//                     and the optimizer's step() eager (model_step_bench's "graphed");
//   - the loss copied into a train::LossLog, read when full (every kLossLogCapacity steps).
// Shapes: the reference models at model_step_bench's shapes (zoo::Mlp on 128 images of
// 28 x 28; zoo::Gpt with GptConfig{} on 32 x 64 tokens), or with `small` (tests) zoo::Mlp on
// 8 images and a gpt of one layer (vocab 32, block 8, 2 heads, embd 16) on 2 x 8 tokens.
//
// What a sample holds (MemoryFigures), after the step numbered `step` (1-based) and a wait for
// the device: the device allocator's stats (allocated, reserved, private pools) and its
// segments and blocks from a snapshot; the tree manager's pool (its segments, blocks, and
// graphs::stats().pool_bytes over every graph pool); the tree manager's counters; and, where
// glibc can tell, the bytes of the host heap in use by this thread's arena (mallinfo2), which
// shows host-side growth (bookkeeping that grows per replay) that no device statistic would.
//
// Not thread-safe: runs on the calling thread, on that thread's tree manager of the device.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "core/caching_allocator.h"
#include "core/format.h"
#include "core/rng.h"
#include "core/stream.h"
#include "graphs/compile/compile.h"
#include "graphs/explain.h"
#include "graphs/tree/tree_manager.h"
#include "models/optim/adamw.h"
#include "models/optim/schedule.h"
#include "models/optim/sgd.h"
#include "models/train/config.h"
#include "models/train/step.h"
#include "models/zoo/gpt.h"
#include "models/zoo/mlp.h"
#include "ops/random.h"

namespace grove::soak {

enum class SoakMode : std::uint8_t { GraphedStep, Graphed };

inline const char* soak_mode_name(SoakMode mode) {
  return mode == SoakMode::GraphedStep ? "graphed-step" : "graphed";
}

struct SoakConfig {
  std::string model = "mlp";  // mlp | gpt
  Device device = kCPU;
  SoakMode mode = SoakMode::GraphedStep;
  std::int64_t steps = 10000;
  bool small = false;  // the test's shapes (file comment)
  // Steps after which the figures are sampled (1-based; those past `steps` are ignored).
  std::vector<std::int64_t> sample_at = {1, 100, 1000, 10000};
};

struct MemoryFigures {
  std::int64_t step = 0;
  // The device allocator.
  std::size_t allocated_bytes = 0;
  std::size_t reserved_bytes = 0;
  std::size_t private_pool_bytes = 0;  // reserved by every private pool of the device
  std::size_t segments = 0;
  std::size_t blocks = 0;
  std::size_t allocated_blocks = 0;
  std::uint64_t num_segment_allocations = 0;  // backend calls so far (cudaMalloc on CUDA)
  // The tree manager's pool, and every graph pool of the process (graphs::stats()).
  std::size_t pool_segments = 0;
  std::size_t pool_blocks = 0;
  std::size_t pool_allocated_blocks = 0;
  std::size_t graph_pool_bytes = 0;
  // The tree manager (this thread's, of the device): its graphs now, and what it did since the
  // run began.
  std::size_t graph_nodes = 0;
  std::uint64_t warmups = 0;
  std::uint64_t recordings = 0;
  std::uint64_t replays = 0;
  std::uint64_t eager_fallbacks = 0;
  std::uint64_t traces = 0;  // graphs::stats(): compile() traces since the run began
  // Host heap in use by the main arena (0 where unknown; file comment).
  std::size_t host_heap_bytes = 0;
  double loss = 0.0;  // the last step's loss
};

// The bytes in use in the calling thread's heap arena (the main arena on the main thread), or
// 0 when the C library cannot say.
inline std::size_t host_heap_in_use() {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
#else
  return 0;
#endif
}

namespace detail {

constexpr std::int64_t kLossLogCapacity = 100;

// The model, its optimizer, its schedule and how to make a batch.
struct SoakSetup {
  std::shared_ptr<nn::Module> model;
  std::unique_ptr<optim::Optimizer> optimizer;
  std::unique_ptr<optim::LrSchedule> schedule;
  std::vector<std::int64_t> input_sizes;  // float inputs (mlp) or token ids (gpt)
  std::int64_t vocab = 0;                 // gpt: token ids in [0, vocab)
  std::int64_t classes = 10;              // mlp
  std::int64_t batch = 0;

  SoakSetup(const SoakConfig& config) {
    if (config.model == "gpt") {
      zoo::GptConfig gpt;
      std::int64_t tokens = 64;
      batch = 32;
      if (config.small) {
        gpt = zoo::GptConfig{.vocab = 32, .block = 8, .layers = 1, .heads = 2, .embd = 16};
        tokens = 8;
        batch = 2;
      }
      vocab = gpt.vocab;
      input_sizes = {batch, tokens};
      model = std::make_shared<zoo::Gpt>(gpt);
      model->to(config.device);  // before the optimizer takes the parameters
      optimizer = std::make_unique<optim::AdamW>(model->parameters(), optim::AdamwOptions{});
      schedule = std::make_unique<optim::WarmupCosineLr>(3e-4, 100, config.steps);
    } else {
      GROVE_CHECK(config.model == "mlp", "soak: expected --model mlp or gpt, got '", config.model,
                  "'");
      batch = config.small ? 8 : 128;
      input_sizes = {batch, 1, 28, 28};
      model = std::make_shared<zoo::Mlp>();
      model->to(config.device);
      optim::SgdOptions options;
      options.lr = 0.01;
      options.momentum = 0.9;
      optimizer = std::make_unique<optim::SGD>(model->parameters(), options);
      schedule = std::make_unique<optim::WarmupCosineLr>(0.01, 100, config.steps);
    }
  }

  // A new batch on the device (inputs, targets), as a data loader would hand out each step.
  std::pair<Tensor, Tensor> batch_on(Device device, Generator& generator) const {
    if (vocab > 0) {
      return {ops::randint(0, vocab, input_sizes, &generator, device),
              ops::randint(0, vocab, input_sizes, &generator, device)};
    }
    return {ops::randn(input_sizes, TensorOptions(DType::Float32).device(device), &generator),
            ops::randint(0, classes, {batch}, &generator, device)};
  }
};

// The counters a run's figures count from.
struct CountersAtStart {
  graphs::TreeCounters trees;
  std::uint64_t traces = 0;
  explicit CountersAtStart(Device device)
      : trees(graphs::tree_manager(device).counters()), traces(graphs::stats().traces) {}
};

inline MemoryFigures sample(const SoakConfig& config, const CountersAtStart& start,
                            std::int64_t step, double loss) {
  synchronize(current_stream(config.device));
  CachingAllocator& allocator = allocator_for(config.device);
  const graphs::TreeManager& manager = graphs::tree_manager(config.device);
  MemoryFigures figures;
  figures.step = step;
  figures.loss = loss;
  const AllocatorStats stats = allocator.stats();
  figures.allocated_bytes = stats.allocated_bytes;
  figures.reserved_bytes = stats.reserved_bytes;
  figures.private_pool_bytes = stats.private_pool_bytes;
  figures.num_segment_allocations = stats.num_segment_allocations;
  for (const SegmentInfo& segment : allocator.snapshot()) {
    ++figures.segments;
    figures.blocks += segment.blocks.size();
    for (const BlockInfo& block : segment.blocks) figures.allocated_blocks += block.allocated;
    if (!(segment.pool == manager.pool())) continue;
    ++figures.pool_segments;
    figures.pool_blocks += segment.blocks.size();
    for (const BlockInfo& block : segment.blocks) figures.pool_allocated_blocks += block.allocated;
  }
  const graphs::GraphStats graph_stats = graphs::stats();
  figures.graph_pool_bytes = graph_stats.pool_bytes;
  figures.traces = graph_stats.traces - start.traces;
  figures.graph_nodes = manager.num_graph_nodes();
  figures.warmups = manager.counters().warmups - start.trees.warmups;
  figures.recordings = manager.counters().recordings - start.trees.recordings;
  figures.replays = manager.counters().replays - start.trees.replays;
  figures.eager_fallbacks = manager.counters().eager_fallbacks - start.trees.eager_fallbacks;
  figures.host_heap_bytes = host_heap_in_use();
  return figures;
}

}  // namespace detail

// Runs config.steps steps and returns the figures sampled after the steps of config.sample_at
// (in order). Throws what the steps throw.
inline std::vector<MemoryFigures> run_soak(const SoakConfig& config) {
  const detail::CountersAtStart start(config.device);
  detail::SoakSetup setup(config);
  Generator generator(0);
  train::LossLog loss_log(config.device, detail::kLossLogCapacity);
  double last_loss = 0.0;

  std::function<Tensor(const Tensor&, const Tensor&)> step;
  std::unique_ptr<train::TrainStep> train_step;
  graphs::CompiledFunction loss_of;
  if (config.mode == SoakMode::GraphedStep) {
    train::TrainConfig train_config;
    train_config.model = config.model;
    train_config.device = config.device;
    train_config.mode = train::Mode::Graphed;
    train_step = std::make_unique<train::TrainStep>(*setup.model, *setup.optimizer, train_config);
    step = [&](const Tensor& inputs, const Tensor& targets) {
      return (*train_step)(inputs, targets);
    };
  } else {
    graphs::CompileOptions options;
    options.name = config.model + " loss";
    loss_of = graphs::compile(
        [&setup](const graphs::TensorList& in) {
          return graphs::TensorList{train::batch_loss(*setup.model, in[0], in[1])};
        },
        options);
    step = [&](const Tensor& inputs, const Tensor& targets) {
      setup.optimizer->zero_grad(/*set_to_none=*/true);
      Tensor loss = loss_of({inputs, targets})[0];
      loss.backward();
      setup.optimizer->step();
      return loss.detach();
    };
  }

  std::vector<MemoryFigures> samples;
  samples.reserve(config.sample_at.size());  // no growth of its own between samples
  std::size_t next_sample = 0;
  for (std::int64_t done = 0; done < config.steps; ++done) {
    setup.schedule->apply(*setup.optimizer, done);
    const auto [inputs, targets] = setup.batch_on(config.device, generator);
    const Tensor loss = step(inputs, targets);
    const bool full = loss_log.record(loss);
    const std::int64_t number = done + 1;
    while (next_sample < config.sample_at.size() && config.sample_at[next_sample] < number) {
      ++next_sample;
    }
    const bool sampled =
        next_sample < config.sample_at.size() && config.sample_at[next_sample] == number;
    if (full || sampled) {
      const std::vector<double> losses = loss_log.read();
      if (!losses.empty()) last_loss = losses.back();
    }
    if (sampled) samples.push_back(detail::sample(config, start, number, last_loss));
  }
  return samples;
}

// How far the host-heap figure moves between samples without any leak: glibc counts the
// chunks parked in its per-thread caches (tcache) as in use, and which ones are parked when a
// sample is taken varies by a few kilobytes (seen on the CPU: -464 to +1,472 bytes). A leak of
// the smallest chunk (32 bytes) per step adds 288 KiB over 9,000 steps.
constexpr std::size_t kHostHeapNoiseBytes = 32 << 10;

// What grew from one sample to a later one, "" if nothing did: every memory figure must be
// equal (the host heap within kHostHeapNoiseBytes), and nothing recorded, warmed up, traced or
// run eagerly again. The number of free blocks is not among them: how free space is split
// between the live blocks can change without a byte more reserved or allocated (seen once on
// CUDA, gpt in graphed mode: 344 -> 345 blocks between steps 100 and 1,000, then steady);
// free_layout_changed() tells of it. On the CPU it is exactly steady (the soak test checks).
inline std::string growth(const MemoryFigures& from, const MemoryFigures& to) {
  std::string text;
  auto compare = [&](const char* name, auto a, auto b) {
    if (a != b) text += str(text.empty() ? "" : ", ", name, " ", a, " -> ", b);
  };
  compare("allocated", from.allocated_bytes, to.allocated_bytes);
  compare("reserved", from.reserved_bytes, to.reserved_bytes);
  compare("private pools", from.private_pool_bytes, to.private_pool_bytes);
  compare("segments", from.segments, to.segments);
  compare("allocated blocks", from.allocated_blocks, to.allocated_blocks);
  compare("segment allocations", from.num_segment_allocations, to.num_segment_allocations);
  compare("graph pool", from.graph_pool_bytes, to.graph_pool_bytes);
  compare("pool segments", from.pool_segments, to.pool_segments);
  compare("graph nodes", from.graph_nodes, to.graph_nodes);
  compare("warm-ups", from.warmups, to.warmups);
  compare("recordings", from.recordings, to.recordings);
  compare("traces", from.traces, to.traces);
  compare("eager fallbacks", from.eager_fallbacks, to.eager_fallbacks);
  const std::size_t heap_change = from.host_heap_bytes > to.host_heap_bytes
                                      ? from.host_heap_bytes - to.host_heap_bytes
                                      : to.host_heap_bytes - from.host_heap_bytes;
  if (heap_change >= kHostHeapNoiseBytes) {
    compare("host heap", from.host_heap_bytes, to.host_heap_bytes);
  }
  return text;
}

inline bool free_layout_changed(const MemoryFigures& from, const MemoryFigures& to) {
  return from.blocks != to.blocks || from.pool_blocks != to.pool_blocks;
}

// The samples as a table, one row per sample.
inline std::string format_table(const std::vector<MemoryFigures>& samples) {
  std::string text = str("  step  | allocated B | reserved B | segments | blocks (alloc) | ",
                         "graph pool B | pool segs | pool blocks (alloc) | nodes | recordings | ",
                         "replays | host heap B | loss\n");
  for (const MemoryFigures& f : samples) {
    text += str("  ", f.step, " | ", f.allocated_bytes, " | ", f.reserved_bytes, " | ", f.segments,
                " | ", f.blocks, " (", f.allocated_blocks, ") | ", f.graph_pool_bytes, " | ",
                f.pool_segments, " | ", f.pool_blocks, " (", f.pool_allocated_blocks, ") | ",
                f.graph_nodes, " | ", f.recordings, " | ", f.replays, " | ", f.host_heap_bytes,
                " | ", f.loss, "\n");
  }
  return text;
}

}  // namespace grove::soak
