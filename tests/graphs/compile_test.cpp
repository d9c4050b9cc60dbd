// compile(): traces, partitions and graphed calls of ordinary grove functions, compared with
// eager mode on the device of the build (CPU here; the same file on cuda(0) with label gpu).
// Each scenario runs on a fresh thread, so it gets a fresh tree manager and generation state.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "autograd/autograd.h"
#include "compile_test_util.h"
#include "graphs/compile/compile.h"
#include "graphs/compile/traced_function.h"
#include "graphs/trace/tracer.h"
#include "ops/conv.h"
#include "ops/elementwise.h"
#include "ops/inplace.h"
#include "ops/layer_norm.h"
#include "ops/linalg.h"
#include "ops/pool.h"
#include "ops/random.h"
#include "ops/reduce.h"
#include "ops/softmax.h"
#include "tree_test_util.h"

namespace grove::graphs {
namespace {

using namespace grove::ops;
using namespace grove::graphs::testing;  // compile_test_util.h
using CompileTest = testing::TreeTest;

TEST_F(CompileTest, TheTraceOfALayerPrintsAsTextAndDotAndVerifies) {
  on_fresh_thread([] {
    const Mlp mlp;
    const autograd::NoGradGuard no_grad;
    const std::shared_ptr<TracedFunction> traced = TracedFunction::trace(
        [&](const TensorList& in) { return TensorList{relu(linear(in[0], mlp.w1, mlp.b1))}; },
        {input({5, 8}, 7)}, quiet(CompileMode::Interpret));
    ASSERT_FALSE(traced->has_backward());
    const Graph& graph = traced->inference_graph();
    graph.verify();
    std::ostringstream on;  // how the text names a value's device when it is not the CPU
    if (!kTestDevice.is_cpu()) on << " on " << kTestDevice;
    const std::string device = on.str();
    EXPECT_EQ(graph.to_text(), "graph compiled_inference(%x0: float32[5, 8]" + device +
                                   ", static %p0: float32[16, 8]" + device +
                                   ", static %p1: float32[16]" + device +
                                   ") {\n  %3: float32[5, 16]" + device +
                                   " = linear(%x0, %p0, %p1)\n  %4: float32[5, 16]" + device +
                                   " = relu(%3)\n  return (%4)\n}\n");
    const std::string dot = graph.to_dot();
    EXPECT_NE(dot.find("digraph \"compiled_inference\""), std::string::npos) << dot;
    EXPECT_NE(dot.find("n0 [shape=box, label=\"linear\"]"), std::string::npos) << dot;
    EXPECT_NE(dot.find("v0 -> n0 [label=\"%x0\"]"), std::string::npos) << dot;
    EXPECT_NE(dot.find("n1 -> return"), std::string::npos) << dot;
  });
}

TEST_F(CompileTest, ViewsAndCopiesAreNodesAndConstantsKeepTheirTracedValues) {
  on_fresh_thread([] {
    // x.t().contiguous() is a view and a copy; the zeros the function makes and writes is a
    // constant that every call starts again from.
    CompiledFunction f = compile(
        [](const TensorList& in) {
          Tensor acc = zeros({3, 2}, TensorOptions().device(kTestDevice));
          add_(acc, in[0].t().contiguous());
          return TensorList{acc * 2.0};
        },
        quiet());
    const autograd::NoGradGuard no_grad;
    for (int call = 0; call < 4; ++call) {
      const Tensor x = input({2, 3}, 10 + call);
      expect_equal(x.t() * 2.0, f(x), "call " + std::to_string(call));
    }
    const std::string text = f.dump();
    EXPECT_NE(text.find("= permute(%x0) dims=[1, 0]"), std::string::npos) << text;
    EXPECT_NE(text.find("= copy("), std::string::npos) << text;
    EXPECT_NE(text.find("= constant"), std::string::npos) << text;
    EXPECT_NE(text.find("= add_("), std::string::npos) << text;
    EXPECT_EQ(f.stats().traces, 1u);
  });
}

TEST_F(CompileTest, OutputAliasingIsRecorded) {
  on_fresh_thread([] {
    const autograd::NoGradGuard no_grad;
    const std::shared_ptr<TracedFunction> traced = TracedFunction::trace(
        [](const TensorList& in) {
          const Tensor y = in[0] + 1.0;
          return TensorList{in[0], in[0].t(), y, y, y.view({6})};
        },
        {input({2, 3}, 1)}, quiet(CompileMode::Interpret));
    const Graph& graph = traced->inference_graph();
    const AliasKind expected[] = {AliasKind::Input, AliasKind::ViewOfInput, AliasKind::None,
                                  AliasKind::Output, AliasKind::ViewOfOutput};
    const std::int32_t index[] = {0, 0, -1, 2, 2};
    for (std::size_t i = 0; i < 5; ++i) {
      EXPECT_EQ(graph.output_alias(i).kind, expected[i]) << "output " << i << "\n"
                                                         << graph.to_text();
      EXPECT_EQ(graph.output_alias(i).index, index[i]) << "output " << i;
    }
  });
}

TEST_F(CompileTest, AnotherThreadsOpsNeverReachATrace) {
  on_fresh_thread([] {
    Graph graph("one_thread");
    const Tensor x = input({4}, 1);
    {
      Tracer tracer(graph);
      tracer.add_input(x, "x");
      const Tensor y = relu(x);
      std::thread loader([&] {  // a data loader's work while the trace runs
        const Tensor batch = zeros({4}, TensorOptions().device(kTestDevice));
        const Tensor scaled = (batch + 1.0).t().contiguous();
        (void)scaled;
      });
      loader.join();
      tracer.finish({exp(y)});
    }
    ASSERT_EQ(graph.nodes().size(), 2u) << graph.to_text();
    EXPECT_EQ(graph.nodes()[0].op, OpKind::Relu);
    EXPECT_EQ(graph.nodes()[1].op, OpKind::Exp);
  });
}

TEST_F(CompileTest, VerifyNamesTheNodeWhoseShapeDisagreesWithItsOp) {
  Graph graph("bad");
  const ValueId x = graph.add_input(zeros({2, 3}), "x");
  Node node;
  node.op = OpKind::Relu;
  node.inputs = {x};
  const Tensor wrong = zeros({3, 2});
  graph.add_node(node, std::span<const Tensor>(&wrong, 1));
  graph.set_outputs({graph.nodes()[0].outputs[0]});
  try {
    graph.verify();
    FAIL() << "verify accepted relu of [2, 3] recorded as [3, 2]";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("graph bad: node 0"), std::string::npos) << message;
    EXPECT_NE(message.find("relu of these inputs makes float32[2, 3]"), std::string::npos)
        << message;
  }
}

TEST_F(CompileTest, CompiledMlpEqualsEagerInLossAndGradientsAndReplaysAfterOneRecording) {
  on_fresh_thread([] {
    const Mlp mlp;
    CompiledFunction loss_of = compile(
        [&](const TensorList& in) { return TensorList{cross_entropy(mlp.forward(in[0]), in[1])}; },
        quiet());
    for (int step = 0; step < 5; ++step) {
      const Tensor x = input({6, 8}, 100 + step);
      const Tensor t = targets(6, 200 + step);
      mlp.zero_grad();
      const Tensor eager = cross_entropy(mlp.forward(x), t);
      eager.backward();
      std::vector<Tensor> eager_grads;
      for (const Tensor& p : mlp.parameters()) eager_grads.push_back(p.grad().clone());
      mlp.zero_grad();
      const Tensor compiled = loss_of({x, t})[0];
      EXPECT_TRUE(compiled.requires_grad());
      compiled.backward();
      const std::string what = "step " + std::to_string(step);
      expect_equal(eager, compiled, what + " loss");
      for (std::size_t i = 0; i < eager_grads.size(); ++i) {
        expect_equal(eager_grads[i], mlp.parameters()[i].grad(),
                     what + " grad " + std::to_string(i));
      }
    }
    EXPECT_EQ(loss_of.stats().traces, 1u);
    EXPECT_EQ(loss_of.stats().eager_calls, 0u);
    const TreeCounters& counters = tree_manager(kTestDevice).counters();
    EXPECT_EQ(counters.recordings, 2u);  // the forward and the backward, once each
    EXPECT_EQ(counters.eager_fallbacks, 0u);
    EXPECT_GE(counters.replays, 6u);  // steps 3-5: both functions replay
  });
}

// The backward's gradients live in the tree manager's pool for one step; the grad() a leaf
// adopts, and what autograd::grad returns, must outlive it (Note [Memory lent by a graph pool]).
TEST_F(CompileTest, GradientsKeptFromAGraphedBackwardSurviveLaterSteps) {
  on_fresh_thread([] {
    const Mlp mlp;
    CompiledFunction loss_of = compile(
        [&](const TensorList& in) { return TensorList{cross_entropy(mlp.forward(in[0]), in[1])}; },
        quiet());
    std::vector<std::vector<float>> kept_values;
    std::vector<Tensor> kept;  // one adopted grad() and one grad() result per step
    for (int step = 0; step < 5; ++step) {
      const Tensor x = input({6, 8}, 300 + step);
      const Tensor t = targets(6, 400 + step);
      mlp.zero_grad();
      loss_of({x, t})[0].backward();
      kept.push_back(mlp.w1.grad());
      kept.push_back(autograd::grad({loss_of({x, t})[0]}, {mlp.w2})[0]);
      for (std::size_t k = kept.size() - 2; k < kept.size(); ++k) {
        kept_values.push_back(kept[k].to(kCPU).to_vector<float>());
      }
    }
    EXPECT_GE(tree_manager(kTestDevice).counters().replays, 6u);
    for (std::size_t k = 0; k < kept.size(); ++k) {
      EXPECT_EQ(kept[k].to(kCPU).to_vector<float>(), kept_values[k]) << "kept gradient " << k;
    }
  });
}

TEST_F(CompileTest, ThePartitionOfATwoLayerMlpSavesOnlyWhatTheBackwardReads) {
  on_fresh_thread([] {
    const Mlp mlp;
    const TensorList inputs = {input({6, 8}, 1), targets(6, 2)};
    const std::shared_ptr<TracedFunction> traced = TracedFunction::trace(
        [&](const TensorList& in) { return TensorList{cross_entropy(mlp.forward(in[0]), in[1])}; },
        inputs, quiet(CompileMode::Interpret));
    ASSERT_TRUE(traced->has_backward());
    const Partition& parts = traced->partition();
    const Graph& backward = traced->backward_graph();
    std::vector<std::string> saved;
    for (std::size_t k = 0; k < parts.saved.size(); ++k) {
      saved.push_back(backward.describe_value(backward.inputs()[k]));
    }
    // The backward needs x (w1's gradient), the targets, relu's output (w2's gradient, and
    // relu's rule, which reads its output, not its input), the logits and the log-sum-exp
    // (cross_entropy's rule); nothing else the forward made: not the first linear's output.
    // Values off the CPU print their device.
    const std::string on = kTestDevice.is_cpu() ? "" : str(" on ", kTestDevice);
    const std::vector<std::string> expected = {
        "%saved0: float32[6, 8]" + on, "%saved1: int64[6]" + on, "%saved2: float32[6, 16]" + on,
        "%saved3: float32[6, 4]" + on, "%saved4: float32[6]" + on};
    EXPECT_EQ(saved, expected) << traced->dump();
    EXPECT_EQ(parts.saved_input_index[0], 0);  // x: kept by the caller, not returned
    EXPECT_EQ(parts.saved_input_index[1], 1);  // the targets
    EXPECT_EQ(traced->forward_graph().outputs().size(), 1u + 3u);  // the loss, and 3 saved
    EXPECT_EQ(backward.outputs().size(), 4u);                      // w1, b1, w2, b2
  });
}

// A random op in a trace draws new numbers on every call (graphed replays read the graph's RNG
// cell), and each call's backward uses the mask its own forward drew.
TEST_F(CompileTest, RandomOpsDrawNewNumbersOnEveryReplay) {
  on_fresh_thread([] {
    CompiledFunction f = compile([](const Tensor& x) { return dropout(x, 0.5); }, quiet());
    const Tensor x = on_device(ones({4096})).requires_grad_();
    std::vector<std::vector<float>> seen;
    for (int call = 0; call < 5; ++call) {
      x.set_grad({});
      const Tensor out = f(x);
      sum(out).backward();
      const std::vector<float> values = out.detach().to(kCPU).to_vector<float>();
      std::size_t zeros = 0;
      for (const float v : values) {
        ASSERT_TRUE(v == 0.0f || v == 2.0f) << "call " << call << ": " << v;
        zeros += v == 0.0f;
      }
      EXPECT_GT(zeros, 4096u * 4 / 10) << "call " << call;
      EXPECT_LT(zeros, 4096u * 6 / 10) << "call " << call;
      // d sum(dropout(x)) / dx = mask / (1 - p): the values this call's forward returned for x = 1.
      EXPECT_EQ(x.grad().to(kCPU).to_vector<float>(), values) << "call " << call;
      for (const std::vector<float>& earlier : seen) EXPECT_NE(earlier, values) << "call " << call;
      seen.push_back(values);
    }
    EXPECT_EQ(f.stats().traces, 1u);
    EXPECT_EQ(f.stats().eager_calls, 0u);
    const TreeCounters& counters = tree_manager(kTestDevice).counters();
    EXPECT_EQ(counters.eager_fallbacks, 0u);  // x requires gradients: copied in all the same
    EXPECT_EQ(counters.recordings, 2u);
    EXPECT_EQ(counters.replays, 6u);  // calls 3-5, forward and backward
  });
}

// A trace holds the parameters it found; replacing one (even by a tensor of another shape) is
// noticed when the trace holds the last handle on the old one, and traced again.
TEST_F(CompileTest, AReplacedParameterIsNoticedAndTracedAgain) {
  on_fresh_thread([] {
    Tensor w = parameter({4, 8}, 5);
    CompiledFunction f = compile([&](const Tensor& x) { return matmul(x, w.t()); }, quiet());
    const Tensor x = input({3, 8}, 6);
    for (int call = 0; call < 3; ++call) expect_equal(matmul(x, w.t()), f(x), "before");
    w = parameter({5, 8}, 7);  // the old w is held by the trace alone now
    for (int call = 0; call < 3; ++call) expect_equal(matmul(x, w.t()), f(x), "after");
    EXPECT_EQ(f.stats().traces, 2u);
    EXPECT_EQ(f.stats().retraces, 1u);
    ASSERT_FALSE(f.warnings().empty());
    EXPECT_THAT(f.warnings().back(), ::testing::HasSubstr("a parameter was replaced?"));
  });
}

TEST_F(CompileTest, InferenceUnderNoGradUsesOneInferenceGraph) {
  on_fresh_thread([] {
    const Mlp mlp;
    CompiledFunction f = compile([&](const Tensor& x) { return mlp.forward(x); }, quiet());
    const autograd::NoGradGuard no_grad;
    for (int call = 0; call < 3; ++call) {
      const Tensor x = input({4, 8}, 30 + call);
      const Tensor y = f(x);
      EXPECT_FALSE(y.requires_grad());
      expect_equal(mlp.forward(x), y, "call " + std::to_string(call));
    }
    EXPECT_NE(f.dump().find("compiled_inference"), std::string::npos) << f.dump();
    EXPECT_EQ(tree_manager(kTestDevice).counters().recordings, 1u);
  });
}

TEST_F(CompileTest, AnOutputKeptPastTheStepNamesTheCompiledCallThatReturnedIt) {
  on_fresh_thread([] {
    const Mlp mlp;
    CompiledFunction f = compile([&](const Tensor& x) { return mlp.forward(x); }, quiet());
    const autograd::NoGradGuard no_grad;
    const Tensor x = input({2, 8}, 11);
    f(x);  // the trace: its outputs are the eager run's, which no later call overwrites
    const int line = __LINE__ + 1;
    const Tensor kept = f(x);  // the warm-up's, in the graph pool
    for (int call = 0; call < 2; ++call) f(x);
    std::string message;
    try {
      kept.to(kCPU).to_vector<float>();
    } catch (const Error& error) {
      message = error.what();
    }
    EXPECT_THAT(message,
                ::testing::HasSubstr(str("returned by the call at compile_test.cpp:", line)));
  });
}

TEST_F(CompileTest, ANewInputShapeTracesAgain) {
  on_fresh_thread([] {
    const Mlp mlp;
    CompiledFunction f = compile([&](const Tensor& x) { return mlp.forward(x); }, quiet());
    const autograd::NoGradGuard no_grad;
    for (const std::int64_t batch : {4, 4, 7, 4, 7}) {
      const Tensor x = input({batch, 8}, static_cast<std::uint64_t>(batch));
      expect_equal(mlp.forward(x), f(x), "batch " + std::to_string(batch));
    }
    EXPECT_EQ(f.stats().traces, 2u);
  });
}

TEST_F(CompileTest, AHostReadInTheFunctionRunsItEagerlyWithTheReason) {
  on_fresh_thread([] {
    CompiledFunction f = compile([](const Tensor& x) { return x * sum(x).item<float>(); }, quiet());
    const Tensor x = input({5}, 3);
    for (int call = 0; call < 3; ++call) expect_equal(x * sum(x).item<float>(), f(x), "call");
    EXPECT_EQ(f.stats().eager_calls, 3u);
    ASSERT_EQ(f.stats().eager_reasons.size(), 1u);
    EXPECT_NE(f.stats().eager_reasons.begin()->first.find("item() reads tensor data on the host"),
              std::string::npos);
    ASSERT_EQ(f.warnings().size(), 1u);  // said once, not per call

    CompileOptions strict = quiet();
    strict.or_error = true;
    CompiledFunction g = compile([](const Tensor& y) { return y * sum(y).item<float>(); }, strict);
    EXPECT_THROW(g(x), Error);
  });
}

TEST_F(CompileTest, ACompiledBlockInsideAnEagerModelAccumulatesLikeEager) {
  on_fresh_thread([] {
    const Mlp mlp;
    const Tensor head = parameter({4, 4}, 9);
    CompiledFunction block = compile([&](const Tensor& x) { return mlp.forward(x); }, quiet());
    for (int step = 0; step < 4; ++step) {
      const Tensor x = input({3, 8}, 50 + step);
      mlp.zero_grad();
      head.set_grad({});
      sum(matmul(mlp.forward(x), head)).backward();
      const Tensor eager_w1 = mlp.w1.grad().clone(), eager_head = head.grad().clone();
      mlp.zero_grad();
      head.set_grad({});
      sum(matmul(block(x), head)).backward();
      expect_equal(eager_w1, mlp.w1.grad(), "w1");
      expect_equal(eager_head, head.grad(), "head");
      // Twice through the compiled block before one backward (two forwards pending, their
      // backwards in reverse order): the gradients of both uses add up, as in eager mode.
      const Tensor x2 = input({3, 8}, 60 + step);
      mlp.zero_grad();
      sum(matmul(mlp.forward(x), head) + matmul(mlp.forward(x2), head)).backward();
      const Tensor eager_twice = mlp.w1.grad().clone();
      mlp.zero_grad();
      sum(matmul(block(x), head) + matmul(block(x2), head)).backward();
      expect_equal(eager_twice, mlp.w1.grad(), "w1, two uses");
    }
  });
}

TEST_F(CompileTest, TwoChainedCompiledFunctionsGiveEagerGradients) {
  on_fresh_thread([] {
    const Mlp mlp;
    CompiledFunction first =
        compile([&](const Tensor& x) { return relu(linear(x, mlp.w1, mlp.b1)); }, quiet());
    CompiledFunction second =
        compile([&](const Tensor& h) { return linear(h, mlp.w2, mlp.b2); }, quiet());
    for (int step = 0; step < 4; ++step) {
      const Tensor x = input({3, 8}, 70 + step);
      const Tensor t = targets(3, 80 + step);
      mlp.zero_grad();
      cross_entropy(mlp.forward(x), t).backward();
      std::vector<Tensor> eager;
      for (const Tensor& p : mlp.parameters()) eager.push_back(p.grad().clone());
      mlp.zero_grad();
      cross_entropy(second(first(x)), t).backward();
      for (std::size_t i = 0; i < eager.size(); ++i) {
        expect_equal(eager[i], mlp.parameters()[i].grad(), "grad " + std::to_string(i));
      }
    }
  });
}

TEST_F(CompileTest, AnInputThatRequiresGradGetsItsGradient) {
  on_fresh_thread([] {
    const Mlp mlp;
    CompiledFunction f = compile([&](const Tensor& x) { return sum(mlp.forward(x)); }, quiet());
    for (int step = 0; step < 3; ++step) {
      const Tensor x = input({2, 8}, 90 + step).requires_grad_();
      sum(mlp.forward(x)).backward();
      const Tensor eager = x.grad().clone();
      x.set_grad({});
      f(x).backward();
      expect_equal(eager, x.grad(), "x.grad()");
    }
    // Graphed, not run eagerly: the manager copies an input that requires gradients as any.
    EXPECT_EQ(tree_manager(kTestDevice).counters().eager_fallbacks, 0u);
    EXPECT_EQ(tree_manager(kTestDevice).counters().recordings, 2u);
  });
}

TEST_F(CompileTest, SmallCnnAndTransformerBlockTracesMatchEager) {
  on_fresh_thread([] {
    const Tensor kernel = parameter({4, 1, 3, 3}, 11), bias = parameter({4}, 12);
    const Tensor gamma = parameter({8}, 13), beta = parameter({8}, 14);
    const Tensor wq = parameter({8, 8}, 15), wo = parameter({8, 8}, 16);
    auto cnn = [&](const Tensor& x) {
      return sum(max_pool2d(relu(conv2d(x, kernel, bias, {1, 1}, {1, 1})), {2, 2}));
    };
    auto block = [&](const Tensor& x) {  // x: (T, C); one head of causal-free self-attention
      const Tensor h = layer_norm(x, {8}, gamma, beta);
      const Tensor q = linear(h, wq);
      const Tensor attention = softmax(matmul(q, q.t()) * (1.0 / std::sqrt(8.0)), -1);
      return sum(x + linear(matmul(attention, q), wo));
    };
    CompiledFunction compiled_cnn = compile([&](const Tensor& x) { return cnn(x); }, quiet());
    CompiledFunction compiled_block = compile([&](const Tensor& x) { return block(x); }, quiet());
    for (int step = 0; step < 3; ++step) {
      const Tensor image = input({2, 1, 6, 6}, 20 + step);
      kernel.set_grad({});
      cnn(image).backward();
      const Tensor eager_kernel = kernel.grad().clone();
      kernel.set_grad({});
      compiled_cnn(image).backward();
      expect_equal(eager_kernel, kernel.grad(), "conv kernel grad");

      const Tensor tokens = input({5, 8}, 40 + step);
      wq.set_grad({});
      block(tokens).backward();
      const Tensor eager_wq = wq.grad().clone();
      wq.set_grad({});
      compiled_block(tokens).backward();
      expect_equal(eager_wq, wq.grad(), "wq grad");
    }
  });
}

}  // namespace
}  // namespace grove::graphs
