// The reference models' whole training step (zero grad, forward, loss, backward, optimizer
// step), timed the way the GPU anchors time it (../shared/anchors/pytorch_gpu_bench.py and
// jax_gpu_bench.py): random data of the real shapes, steps queued back to back, one wait for the
// device per batch of steps. Not a test: it asserts nothing about speed or values; a case that
// cannot run (no device, a graphed mode that fails) reports its error and the suite goes on.
//
//   BM_ModelStep/<model>/<mode>/<device>
//     model   every model of the registry (zoo::model_specs()), its batch by its task:
//             image classifiers (mlp, cnn, ...): batch 128 of (128, 1, 28, 28) N(0, 1) inputs,
//                       int64 labels in [0, 10), SGD lr 0.01, momentum 0.9
//             language models (gpt): batch 32 x T (the model's context length, 64 for the gpt)
//                       int64 tokens in [0, 128) and targets, AdamW lr 3e-4 (weight decay
//                       0.01, PyTorch's default)
//             The rates are the GPU anchors' (their scripts use 0.01 for SGD; the training runs
//             use 0.1). A rate changes no kernel, so it does not change the time.
//     mode    eager:        train::TrainStep in eager mode, every op dispatched as called
//             graphed:      the forward and loss compiled with graphs::compile (replayed as a
//                           Forward graph); loss.backward() runs the compiled function's
//                           backward graph; zero_grad and the optimizer's step() run eagerly
//             graphed-step: train::TrainStep in graphed mode, the whole step compiled and
//                           replayed as one graph (models/train/step.cpp)
//     device  cpu (the CPU stream) or cuda (cuda(0); skipped with an error line without one)
//
// Each case builds its model (its registry spec's make()), warms up (traces, warm-up runs,
// recordings, cuBLAS/cuDNN plans, the allocator's cache), then times iterations of steps queued
// back to back (kCudaStepsPerIteration on cuda; one on the CPU, whose stream runs each kernel as it
// is launched, so nothing queues), each followed by one wait for the device. Manual time is the
// wall time of an iteration, waits included, so Google Benchmark's Time column is per batch of
// steps; the counters are per step:
//   us_per_step       wall time per step (the figure to compare with the anchors' median_us)
//   samples_per_s     samples (images, or sequences of 64 tokens) per second of wall time
//   peak_memory_MiB   the device allocator's peak allocated bytes over the timed steps only
//                     (peak stats are reset after warm-up): parameters, optimizer state and the
//                     step's live tensors, without what tracing and recording used once. A
//                     replay allocates nothing: the graphs' activations live in their private
//                     pool, whose blocks count as allocated only while they hold a live output
//                     (the loss, gradients, saved activations between forward and backward);
//   graph_pool_MiB    graphed modes: bytes the graphs' private pool holds (reserved) after the
//                     timed steps; peak_memory_MiB + graph_pool_MiB bounds the step's memory
//   warmup_peak_MiB   the same peak from before the model was built to the end of warm-up
//                     (closest to the anchors' peak_MiB, which includes compilation)
//   ops_per_step      ops dispatched on this thread per step (an ops::OpObserver counting over
//                     kCountedSteps steps after warm-up, so the observer is not timed); in the
//                     graphed modes these are the ops still run eagerly around the replays
//   graph_kernels     graphed modes: kernels in the graphs replayed per step (the recorded
//                     graphs on the tree manager's current path after a step)
//   eager_calls, replays   graphed modes: compiled calls that ran eagerly during timing (should
//                     be 0; a fallback's reason is printed once) and replays during timing
//   gpu_us_per_step   cuda: CUDA events around each batch on the current stream, per step (when
//                     the host is the bottleneck this includes the GPU's idle gaps, so it
//                     approaches us_per_step)
//   host_us_per_step  cuda: host time to queue one step (no wait included)
//   kernel_benchmark  cuda: 1 when the kernel benchmark modes were on (below)
//   expandable_pools  1 when graph pools grew expandable segments (below)
//
// Kernel benchmark modes: on CUDA the suite turns on set_conv_benchmark (ops/conv.h) and
// set_matmul_benchmark (ops/precision.h), so each convolution and float32 matrix product shape
// runs the fastest of its library's candidate kernels, timed once during warm-up. The anchors run
// PyTorch with its defaults (cudnn.benchmark off). --kernel_benchmark=0 keeps the libraries'
// heuristic picks instead, for a like-for-like comparison of that setting.
//
// Graph pools grow expandable segments where the device can map memory
// (Note [Expandable segments of a private pool] in core/caching_allocator.h);
// --expandable_pools=0 gives them ordinary segments instead, to compare graph_pool_MiB.
//
// Run (a Release build; GPU cases need the CUDA build and a device):
//   ./build/bench/model_step_bench --benchmark_filter=cpu
//   ./build/bench/model_step_bench --benchmark_filter=cuda --benchmark_repetitions=3
//       --benchmark_out=steps.json --benchmark_out_format=json
//   scripts/compare_gpu.sh runs the cuda cases next to the PyTorch and JAX anchors.
// Google Benchmark appends "/manual_time" to the names (BM_ModelStep/gpt/eager/cpu/manual_time).
// Each case runs for --benchmark_min_time (0.5 s by default) after its warm-up: the CPU gpt
// (~0.1 s a step on two cores) takes a few seconds.
//
// Measured 2026-11-25, 2-core build machine (shared, 10-20% noise), CPU stream, us per step
// (eager | graphed | graphed-step): mlp 872 | 1033 | 1026; cnn 34,192 | 46,516 | 47,094 (medians
// of 3); gpt 102,301 | failed then (a slice's gradient buffer made outside dispatch, since
// mended) | 104,539. gpt peak MiB, timed steps | warm-up: eager 88 | 88; graphed-step 88 (+ 172
// of graph pool) | 407. Later figures: README's Performance section.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "autograd/autograd.h"
#include "core/caching_allocator.h"
#include "core/rng.h"
#include "core/stream.h"
#include "graphs/compile/compile.h"
#include "graphs/tree/graph_node.h"
#include "graphs/tree/tree_manager.h"
#include "models/optim/adamw.h"
#include "models/optim/sgd.h"
#include "models/train/config.h"
#include "models/train/step.h"
#include "models/zoo/registry.h"
#include "ops/conv.h"
#include "ops/dispatch.h"
#include "ops/precision.h"
#include "ops/random.h"

#ifdef GROVE_HAS_CUDA
#include <cuda_runtime_api.h>

#include "core/cuda/cuda_check.h"
#include "core/cuda/cuda_device.h"
#endif

namespace {

using namespace grove;
using Clock = std::chrono::steady_clock;

enum class StepMode { Eager, Graphed, GraphedStep };

const char* mode_name(StepMode mode) {
  switch (mode) {
    case StepMode::Eager:
      return "eager";
    case StepMode::Graphed:
      return "graphed";
    case StepMode::GraphedStep:
      return "graphed-step";
  }
  return "?";
}

constexpr int kCpuWarmupSteps = 6;    // trace + warm-up, recording, then a few replays
constexpr int kCudaWarmupSteps = 20;  // as the anchors: plans, workspaces, the cache
constexpr int kCountedSteps = 3;      // steps the op observer counts
constexpr int kCudaStepsPerIteration = 25;
constexpr double kMiB = 1024.0 * 1024.0;

bool kernel_benchmark = true;  // --kernel_benchmark (file comment)
bool expandable_pools = true;  // --expandable_pools (file comment)

// A model, its optimizer and one batch of random data on `device`.
struct ModelSetup {
  std::shared_ptr<nn::Module> model;
  std::unique_ptr<optim::Optimizer> optimizer;
  Tensor inputs;   // classifiers: (128, 1, 28, 28) float32; language models: (32, T) int64
  Tensor targets;  // classifiers: (128) int64; language models: (32, T) int64
  std::int64_t samples = 0;

  ModelSetup(const zoo::ModelSpec& spec, Device device) : model(spec.make()) {
    model->to(device);  // before the optimizer takes the parameters
    Generator generator(0);
    if (spec.task == zoo::TaskKind::LanguageModel) {
      samples = 32;
      const std::int64_t tokens = spec.context_length(*model);
      inputs = ops::randint(0, 128, {32, tokens}, &generator, device);
      targets = ops::randint(0, 128, {32, tokens}, &generator, device);
      optim::AdamwOptions options;
      options.lr = 3e-4;
      optimizer = std::make_unique<optim::AdamW>(model->parameters(), options);
    } else {
      samples = 128;
      inputs = ops::randn({128, 1, 28, 28}, {}, &generator).to(device);
      targets = ops::randint(0, 10, {128}, &generator, device);
      optim::SgdOptions options;
      options.lr = 0.01;
      options.momentum = 0.9;
      optimizer = std::make_unique<optim::SGD>(model->parameters(), options);
    }
  }
};

// Counts the ops dispatched on the thread that registers it.
class OpCounter final : public ops::OpObserver {
 public:
  void on_op(const ops::OpCall&, const ops::OpOutputs&) override { ++count; }
  std::uint64_t count = 0;
};

void wait(Device device) {
  if (!device.is_cpu()) synchronize(current_stream(device));
}

// Kernels in the graphs on the tree manager's current path: what one replayed step launches.
std::size_t kernels_on_current_path(Device device) {
  const graphs::TreeNode* current = graphs::tree_manager(device).current_node();
  if (current == nullptr) return 0;
  std::size_t kernels = 0;
  for (const graphs::TreeNode* node : current->path()) {
    if (node->kind() == graphs::TreeNode::Kind::Graph) {
      kernels += static_cast<const graphs::GraphNode*>(node)->num_kernels();
    }
  }
  return kernels;
}

#ifdef GROVE_HAS_CUDA
// Two CUDA events on the device's current stream, around a batch of steps.
class EventTimer {
 public:
  explicit EventTimer(Device device) : stream_(cuda_backend::cuda_stream(current_stream(device))) {
    GROVE_CUDA_CHECK(cudaEventCreate(&start_));
    GROVE_CUDA_CHECK(cudaEventCreate(&stop_));
  }
  ~EventTimer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  void start() { GROVE_CUDA_CHECK(cudaEventRecord(start_, stream_)); }
  void stop() { GROVE_CUDA_CHECK(cudaEventRecord(stop_, stream_)); }
  // Waits for the stop event; the milliseconds between the two.
  double elapsed_seconds() {
    GROVE_CUDA_CHECK(cudaEventSynchronize(stop_));
    float milliseconds = 0.0f;
    GROVE_CUDA_CHECK(cudaEventElapsedTime(&milliseconds, start_, stop_));
    return milliseconds / 1e3;
  }

 private:
  cudaStream_t stream_;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};
#endif

// Warms up, counts ops, then times `step` in batches; sets the counters (file comment).
// `compile_stats` gives the graphed modes' CompileStats (null in eager mode).
template <typename Step, typename Stats>
void time_steps(benchmark::State& state, Device device, StepMode mode, std::int64_t samples,
                Step step, Stats compile_stats) {
  CachingAllocator& allocator = allocator_for(device);
  const int warmup_steps = device.is_cpu() ? kCpuWarmupSteps : kCudaWarmupSteps;
  for (int i = 0; i < warmup_steps; ++i) step();
  wait(device);
  state.counters["warmup_peak_MiB"] =
      static_cast<double>(allocator.stats().peak_allocated_bytes) / kMiB;

  OpCounter counter;
  {
    const ops::OpObserverGuard guard(&counter);
    for (int i = 0; i < kCountedSteps; ++i) step();
  }
  wait(device);
  state.counters["ops_per_step"] = static_cast<double>(counter.count) / kCountedSteps;
  if (mode != StepMode::Eager) {
    state.counters["graph_kernels"] = static_cast<double>(kernels_on_current_path(device));
  }

  const std::uint64_t replays_before = graphs::tree_manager(device).counters().replays;
  const std::uint64_t eager_calls_before = compile_stats().eager_calls;
  allocator.reset_peak_stats();
  const int steps_per_iteration = device.is_cpu() ? 1 : kCudaStepsPerIteration;
  double wall_seconds = 0.0, host_seconds = 0.0, gpu_seconds = 0.0;
#ifdef GROVE_HAS_CUDA
  std::unique_ptr<EventTimer> events;
  if (!device.is_cpu()) events = std::make_unique<EventTimer>(device);
#endif
  for (auto _ : state) {
    const auto start = Clock::now();
#ifdef GROVE_HAS_CUDA
    if (events) events->start();
#endif
    for (int i = 0; i < steps_per_iteration; ++i) step();
    const auto queued = Clock::now();
#ifdef GROVE_HAS_CUDA
    if (events) {
      events->stop();
      gpu_seconds += events->elapsed_seconds();
    }
#endif
    wait(device);
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    state.SetIterationTime(elapsed);
    wall_seconds += elapsed;
    host_seconds += std::chrono::duration<double>(queued - start).count();
  }

  const double steps = static_cast<double>(state.iterations()) * steps_per_iteration;
  state.counters["us_per_step"] = wall_seconds * 1e6 / steps;
  if (!device.is_cpu()) state.counters["kernel_benchmark"] = kernel_benchmark ? 1 : 0;
  state.counters["expandable_pools"] = expandable_pools ? 1 : 0;
  state.counters["samples_per_s"] = static_cast<double>(samples) * steps / wall_seconds;
  const AllocatorStats stats = allocator.stats();
  state.counters["peak_memory_MiB"] = static_cast<double>(stats.peak_allocated_bytes) / kMiB;
  if (mode != StepMode::Eager) {
    state.counters["graph_pool_MiB"] = static_cast<double>(stats.private_pool_bytes) / kMiB;
  }
  if (!device.is_cpu()) {
    state.counters["gpu_us_per_step"] = gpu_seconds * 1e6 / steps;
    state.counters["host_us_per_step"] = host_seconds * 1e6 / steps;
  }
  if (mode != StepMode::Eager) {
    state.counters["replays"] =
        static_cast<double>(graphs::tree_manager(device).counters().replays - replays_before);
    state.counters["eager_calls"] =
        static_cast<double>(compile_stats().eager_calls - eager_calls_before);
  }
}

// Builds the case's model and step and times it.
void run_steps(benchmark::State& state, const std::string& model_name, StepMode mode,
               Device device) {
  ModelSetup setup(zoo::model_spec(model_name), device);
  const graphs::TensorList batch = {setup.inputs, setup.targets};
  if (mode == StepMode::Graphed) {
    graphs::CompileOptions options;
    options.name = model_name + " loss";  // its graphs: "<model> loss forward", "... backward"
    graphs::CompiledFunction loss_of = graphs::compile(
        [&setup](const graphs::TensorList& in) {
          return graphs::TensorList{train::batch_loss(*setup.model, in[0], in[1])};
        },
        options);
    auto step = [&] {
      setup.optimizer->zero_grad(/*set_to_none=*/true);
      loss_of(batch)[0].backward();
      setup.optimizer->step();
    };
    time_steps(state, device, mode, setup.samples, step, [&] { return loss_of.stats(); });
    return;
  }
  train::TrainConfig config;
  config.model = model_name;
  config.device = device;
  config.mode = mode == StepMode::Eager ? train::Mode::Eager : train::Mode::Graphed;
  config.clip_grad_norm = 0.0;  // the anchors do not clip
  train::TrainStep train_step(*setup.model, *setup.optimizer, config);
  auto step = [&] { train_step(setup.inputs, setup.targets); };
  time_steps(state, device, mode, setup.samples, step, [&] { return train_step.compile_stats(); });
}

// One case; an error (a graphed mode that cannot run, say) ends the case with its message as
// the case's error line, and the suite goes on.
void run_case(benchmark::State& state, const std::string& model_name, StepMode mode,
              Device device) {
  if (!device.is_cpu() && !cuda_is_available()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  allocator_for(device).reset_peak_stats();
  std::string error;
  try {
    run_steps(state, model_name, mode, device);
  } catch (const std::exception& caught) {
    error = caught.what();
  }
  // Free this case's recordings and pool before the next case measures its peak.
  graphs::tree_manager(device).reset_trees();
  if (!error.empty()) state.SkipWithError(error.c_str());
}

void register_cases() {
  for (const zoo::ModelSpec& spec : zoo::model_specs()) {
    const std::string model = spec.name;
    for (StepMode mode : {StepMode::Eager, StepMode::Graphed, StepMode::GraphedStep}) {
      for (const Device device : {kCPU, cuda(0)}) {
        const std::string name = std::string("BM_ModelStep/") + model + "/" + mode_name(mode) +
                                 "/" + (device.is_cpu() ? "cpu" : "cuda");
        benchmark::RegisterBenchmark(name.c_str(),
                                     [model, mode, device](benchmark::State& state) {
                                       run_case(state, model, mode, device);
                                     })
            ->UseManualTime()
            ->Unit(benchmark::kMillisecond);
      }
    }
  }
}

// Takes --<name>=0|1 out of argv (Google Benchmark refuses flags it does not know); `fallback`
// when absent.
bool take_bool_flag(int& argc, char** argv, const std::string& name, bool fallback) {
  const std::string flag = "--" + name + "=";
  bool on = fallback;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    if (argument.rfind(flag, 0) != 0) {
      argv[kept++] = argv[i];
      continue;
    }
    const std::string value = argument.substr(flag.size());
    if (value != "0" && value != "1") {
      std::fprintf(stderr, "model_step_bench: expected --%s=0 or 1, got '%s'\n", name.c_str(),
                   argument.c_str());
      std::exit(2);
    }
    on = value == "1";
  }
  argc = kept;
  return on;
}

}  // namespace

int main(int argc, char** argv) {
  kernel_benchmark = take_bool_flag(argc, argv, "kernel_benchmark", true);
  expandable_pools = take_bool_flag(argc, argv, "expandable_pools", true);
  allocator_for(kCPU).set_expandable_segments(expandable_pools);
  if (cuda_is_available()) allocator_for(cuda(0)).set_expandable_segments(expandable_pools);
  ops::set_conv_benchmark(kernel_benchmark);
  ops::set_matmul_benchmark(kernel_benchmark);
  register_cases();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
