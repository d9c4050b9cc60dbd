// compile(): host time of a replayed compiled training step, next to the same step written by
// hand as two WrappedFunctions, and the interpreter's cost per node next to eager dispatch.
//
//   BM_CompiledMlpStep/<device>    loss = f({x, t})[0]; loss.backward()   (compile)
//   BM_HandWrittenMlpStep/<device> a Forward and a Backward WrappedFunction whose bodies are
//                                  the same ops with the backward written out by hand, and the
//                                  gradients added into grad() as AccumulateGrad does
//   BM_EagerChain / BM_InterpretedChain   64 dependent adds of one-element tensors, eagerly and
//                                  through Interpreter::run of their trace
//   BM_WholeStep{Eager,Compiled,Captured}/<device>   the reference MLP's training step
//                                  (bench/mlp_step.h: 784-256-256-10, batch 128, SGD momentum as
//                                  in-place ops): as written; compile()d whole (forward,
//                                  backward, update in one graph); and captured by hand into one
//                                  DeviceGraph (cuda_mlp_bench's BM_MlpTrainStepCaptured), the
//                                  floor. Time per step, queued back to back, one wait at the end
// Device 0 is the CPU stream, 1 is cuda(0) (skipped without a device). The MLP is 784-256-10
// with batch 128, the reference MLP's first and last layers.
// Run: ./build/bench/compile_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only
// Measured 2026-11-25 (medians of 5, --benchmark_min_time=0.2):
//   H100 host, cuda(0):  compiled MLP step 77.9 us, hand-written 77.2 (1.01x; three runs
//                        1.005-1.014x); whole step eager 212-300, compiled 105, captured 97.7 us
//                        (1.07x, after the interpreter's copy elision and declared mutated
//                        inputs; 112 before: the zero_grad-first step copies each gradient it
//                        makes into a buffer of its own inside the graph, and a call adds two
//                        stream waits)
//   Measured 2026-11-27 on an H200 (two rounds, medians of 5), against the commit before in the
//   same call: whole step compiled 94.6 / 94.7 us, captured 95.7 / 95.6 (0.99x; 45 kernels
//   against 46); before, compiled 102 / 102, captured 95.7 / 95.7 (1.07x). What changed: each
//   gradient is written by its matmul or sum straight into the buffer grad() keeps
//   (Note [Writing into the copy's target] in graphs/ir/interpreter.h), and replays run on the
//   caller's stream without two event waits
//   (Note [The caller's stream and the manager's stream]).
//   2-core build machine, same day: compiled 812 us, captured 803 (1.01x; 37 kernels against 38)
//   H100 host, CPU stream: compiled MLP step 0.95-1.07 ms, hand-written 0.68-0.86 ms (1.11-1.40x,
//                        noisy); whole step compiled 1.54 ms, captured 1.54 ms, eager 1.17 ms
//   2-core build machine, CPU stream: compiled MLP step 548 us, hand-written 536 (1.02x); whole
//                        step compiled 949 us, captured 927 (1.02x), eager 1230
//   interpreter per node: 288-540 ns against eager dispatch's 313-610 ns in the same runs
#include <benchmark/benchmark.h>

#include "autograd/autograd.h"
#include "bench/mlp_step.h"
#include "core/device_graph.h"
#include "core/stream.h"
#include "graphs/compile/compile.h"
#include "graphs/tree/generation.h"
#include "graphs/tree/graph_node.h"
#include "graphs/ir/interpreter.h"
#include "graphs/trace/tracer.h"
#include "graphs/tree/tree_manager.h"
#include "ops/attributes.h"
#include "ops/elementwise.h"
#include "ops/inplace.h"
#include "ops/linalg.h"
#include "ops/op_table.h"
#include "ops/random.h"
#include "ops/reduce.h"
#include "ops/softmax.h"

namespace {

using namespace grove;
using graphs::TensorList;

Device device_of(const benchmark::State& state) {
  return state.range(0) == 0 ? kCPU : cuda(0);
}

bool skip_without(benchmark::State& state, Device device) {
  if (device.is_cpu() || cuda_is_available()) return false;
  state.SkipWithError("no CUDA device");
  return true;
}

void wait(Device device) {
  if (!device.is_cpu()) synchronize(current_stream(device));
}

struct Mlp {
  Tensor w1, b1, w2, b2, x, t;
  explicit Mlp(Device device) {
    Generator generator(7);
    auto init = [&](IntArrayRef sizes) {
      return (ops::rand(sizes, {}, &generator) * 0.1 - 0.05).to(device).requires_grad_();
    };
    w1 = init({256, 784});
    b1 = init({256});
    w2 = init({10, 256});
    b2 = init({10});
    x = ops::randn({128, 784}, {}, &generator).to(device);
    t = ops::randint(0, 10, {128}, &generator, device);
  }
  std::vector<Tensor> parameters() const { return {w1, b1, w2, b2}; }
};

graphs::TreeOptions quiet_tree() {
  graphs::TreeOptions options;
  options.print_warnings = false;
  return options;
}

void BM_CompiledMlpStep(benchmark::State& state) {
  const Device device = device_of(state);
  if (skip_without(state, device)) return;
  const Mlp mlp(device);
  graphs::CompileOptions options;
  options.print_warnings = false;
  options.tree_options = quiet_tree();
  graphs::CompiledFunction loss_of = graphs::compile(
      [&](const TensorList& in) {
        return TensorList{ops::cross_entropy(
            ops::linear(ops::relu(ops::linear(in[0], mlp.w1, mlp.b1)), mlp.w2, mlp.b2), in[1])};
      },
      options);
  auto step = [&] { loss_of({mlp.x, mlp.t})[0].backward(); };
  for (int warm = 0; warm < 4; ++warm) step();
  wait(device);
  for (auto _ : state) step();
  wait(device);
  state.counters["replays"] = static_cast<double>(graphs::tree_manager(device).counters().replays);
}
BENCHMARK(BM_CompiledMlpStep)->Arg(0)->Arg(1)->UseRealTime();

// The same step by hand: the forward returns the loss and what the backward needs; the backward
// is written out with ops.
void BM_HandWrittenMlpStep(benchmark::State& state) {
  const Device device = device_of(state);
  if (skip_without(state, device)) return;
  const Mlp mlp(device);
  graphs::TreeManager& manager = graphs::tree_manager(device);
  manager.options() = quiet_tree();
  graphs::WrappedFunction forward;
  forward.name = "hand forward";
  forward.mode = graphs::FunctionMode::Forward;
  forward.static_input_indices = {2, 3, 4, 5};
  forward.callable = [](const TensorList& in) {
    const autograd::NoGradGuard no_grad;
    const Tensor pre = ops::linear(in[0], in[2], in[3]);
    const Tensor hidden = ops::relu(pre);
    const Tensor logits = ops::linear(hidden, in[4], in[5]);
    const ops::OpOutputs loss =
        ops::dispatch(ops::op_entry(ops::OpKind::CrossEntropy), {logits, in[1]},
                      ops::LossAttributes{}.to_attributes());
    return TensorList{loss[0], pre, hidden, logits, loss[1]};
  };
  graphs::WrappedFunction backward;
  backward.name = "hand backward";
  backward.mode = graphs::FunctionMode::Backward;
  backward.static_input_indices = {7};
  // in: x, t, pre, hidden, logits, lse, grad, w2
  backward.callable = [](const TensorList& in) {
    const autograd::NoGradGuard no_grad;
    const Tensor dlogits = ops::cross_entropy_backward(in[6], in[4], in[1], in[5]);
    const Tensor dw2 = ops::matmul(dlogits.t(), in[3]);
    const Tensor db2 = ops::sum(dlogits, {0});
    const Tensor dpre =
        ops::where(ops::gt(in[2], 0.0), ops::matmul(dlogits, in[7]), ops::mul(in[2], 0.0));
    const Tensor dw1 = ops::matmul(dpre.t(), in[0]);
    const Tensor db1 = ops::sum(dpre, {0});
    return TensorList{dw1, db1, dw2, db2};
  };
  graphs::ManagedFunction f = manager.add_function(forward);
  graphs::ManagedFunction b = manager.add_function(backward);
  const Tensor one = ones({}, TensorOptions().device(device));
  std::vector<Tensor> grads;
  for (const Tensor& p : mlp.parameters()) grads.push_back(zeros_like(p));
  auto step = [&] {
    const TensorList out = f({mlp.x, mlp.t, mlp.w1, mlp.b1, mlp.w2, mlp.b2});
    const TensorList g = b({mlp.x, mlp.t, out[1], out[2], out[3], out[4], one, mlp.w2});
    for (std::size_t i = 0; i < g.size(); ++i) ops::add_(grads[i], g[i]);
  };
  for (int warm = 0; warm < 4; ++warm) step();
  wait(device);
  for (auto _ : state) step();
  wait(device);
  state.counters["replays"] = static_cast<double>(manager.counters().replays);
}
BENCHMARK(BM_HandWrittenMlpStep)->Arg(0)->Arg(1)->UseRealTime();

constexpr int kChain = 64;

Tensor chain(Tensor x, const Tensor& one) {
  for (int i = 0; i < kChain; ++i) x = ops::add(x, one);
  return x;
}

void BM_EagerChain(benchmark::State& state) {
  const Tensor x = ones({1}), one = ones({1});
  for (auto _ : state) benchmark::DoNotOptimize(chain(x, one).impl());
  state.counters["ns_per_node"] = benchmark::Counter(
      kChain, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_EagerChain);

void BM_InterpretedChain(benchmark::State& state) {
  const Tensor x = ones({1}), one = ones({1});
  graphs::Graph graph("chain");
  {
    graphs::Tracer tracer(graph);
    tracer.add_input(x, "x");
    tracer.add_input(one, "one");
    tracer.finish({chain(x, one)});
  }
  graphs::Interpreter interpreter(graph);
  const std::vector<Tensor> inputs = {x, one};
  for (auto _ : state) benchmark::DoNotOptimize(interpreter.run(inputs, {}).data());
  state.counters["ns_per_node"] = benchmark::Counter(
      kChain, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_InterpretedChain);

// --- the whole training step ---

template <typename Step>
void time_whole_steps(benchmark::State& state, Device device, Step step) {
  for (int warm = 0; warm < 8; ++warm) step();  // traces, warm-up, recording, plans
  wait(device);
  for (auto _ : state) step();
  wait(device);
}

void BM_WholeStepEager(benchmark::State& state) {
  const Device device = device_of(state);
  if (skip_without(state, device)) return;
  grove::bench::MlpStep step(device);
  time_whole_steps(state, device, [&] { step.run(); });
}
BENCHMARK(BM_WholeStepEager)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_WholeStepCompiled(benchmark::State& state) {
  const Device device = device_of(state);
  if (skip_without(state, device)) return;
  grove::bench::MlpStep step(device);
  graphs::CompileOptions options;
  options.name = "mlp step";
  options.print_warnings = false;
  options.tree_options = quiet_tree();
  graphs::CompiledFunction compiled = graphs::compile(
      [&](const TensorList&) {
        const Tensor loss = step.forward();
        loss.backward();
        step.update();
        return TensorList{loss.detach()};
      },
      options);
  time_whole_steps(state, device, [&] { compiled(TensorList{}); });
  state.counters["replays"] = static_cast<double>(graphs::tree_manager(device).counters().replays);
  // Kernels one replay launches, next to BM_WholeStepCaptured's graph nodes.
  if (const graphs::TreeNode* current = graphs::tree_manager(device).current_node();
      current != nullptr && current->kind() == graphs::TreeNode::Kind::Graph) {
    state.counters["nodes"] =
        static_cast<double>(static_cast<const graphs::GraphNode*>(current)->num_kernels());
  }
  state.counters["eager_calls"] = static_cast<double>(compiled.stats().eager_calls);
}
BENCHMARK(BM_WholeStepCompiled)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_WholeStepCaptured(benchmark::State& state) {
  const Device device = device_of(state);
  if (skip_without(state, device)) return;
  grove::bench::MlpStep step(device);
  for (int i = 0; i < 3; ++i) step.run();  // plans and workspaces exist before the capture
  wait(device);
  DeviceGraph graph(device);
  graph.begin_capture(current_stream(device));
  step.run();
  graph.end_capture();
  time_whole_steps(state, device, [&] { graph.replay(); });
  state.counters["nodes"] = static_cast<double>(graph.num_nodes());
}
BENCHMARK(BM_WholeStepCaptured)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
