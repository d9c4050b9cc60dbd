// compile()'s contract with its caller (graphs/compile/compile.h): every call has the effects of
// exactly one eager call; every host access stops a trace; the signature holds strides and
// aliasing; a recompile limit; compiled calls inside a trace; inference and training replay
// from their third call; threads record independently. Each scenario compares with eager mode
// on the device of the build (CPU here; the same file on cuda(0) with label gpu).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <barrier>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "autograd/autograd.h"
#include "compile_test_util.h"
#include "core/device_graph.h"
#include "graphs/compile/compile.h"
#include "graphs/explain.h"
#include "ops/elementwise.h"
#include "ops/inplace.h"
#include "ops/linalg.h"
#include "ops/random.h"
#include "ops/reduce.h"
#include "ops/softmax.h"
#include "tree_test_util.h"

namespace grove::graphs {
namespace {

using namespace grove::ops;
using namespace grove::graphs::testing;
using ::testing::HasSubstr;
using CompileSemantics = testing::TreeTest;

// A whole step that logs its loss on the host: forward, backward, an SGD update, loss.item().
// `log` gets one entry per call that ran it.
TensorList logged_step(const Mlp& mlp, const TensorList& in, std::vector<float>& log) {
  const Tensor loss = cross_entropy(mlp.forward(in[0]), in[1]);
  loss.backward();
  {
    const autograd::NoGradGuard no_grad;
    for (const Tensor& p : mlp.parameters()) {
      add_(p, p.grad(), -0.1);
      zero_(p.grad());
    }
  }
  log.push_back(loss.item<float>());
  return {loss.detach()};
}

void zero_grads(const Mlp& mlp) {
  for (const Tensor& p : mlp.parameters()) p.set_grad(zeros_like(p.detach()));
}

TEST_F(CompileSemantics, AWholeStepThatLogsItsLossUpdatesOnceOnEveryCall) {
  on_fresh_thread([] {
    const Mlp eager, graphed;
    zero_grads(eager);
    zero_grads(graphed);
    std::vector<float> eager_log, graphed_log;
    CompiledFunction step = compile(
        [&](const TensorList& in) { return logged_step(graphed, in, graphed_log); }, quiet());
    for (int s = 0; s < 4; ++s) {
      const TensorList batch = {input({6, 8}, 40 + s), targets(6, 60 + s)};
      const Tensor expected = logged_step(eager, batch, eager_log)[0];
      const Tensor got = step(batch)[0];
      const std::string what = "step " + std::to_string(s);
      expect_equal(expected, got, what + " loss");
      for (std::size_t i = 0; i < eager.parameters().size(); ++i) {
        expect_equal(eager.parameters()[i], graphed.parameters()[i],
                     what + " parameter " + std::to_string(i));
      }
    }
    EXPECT_EQ(graphed_log, eager_log);  // one entry per call, the same values
    EXPECT_EQ(step.stats().eager_calls, 4u);
    ASSERT_EQ(step.stats().eager_reasons.size(), 1u);
    EXPECT_THAT(step.stats().eager_reasons.begin()->first,
                HasSubstr("item() reads tensor data on the host"));
  });
}

// A write to a static input before the host read: the stopped trace's write is the call's.
TEST_F(CompileSemantics, AWriteBeforeAHostReadHappensOnce) {
  on_fresh_thread([] {
    const Tensor counter = on_device(zeros({1}));
    CompiledFunction f = compile(
        [&](const Tensor& x) {
          add_(counter, ones({1}, TensorOptions().device(kTestDevice)));
          return x * sum(x).item<float>();
        },
        quiet());
    const Tensor x = input({5}, 3);
    for (int call = 0; call < 3; ++call) {
      expect_equal(x * sum(x).item<float>(), f(x), "call " + std::to_string(call));
      EXPECT_EQ(values(counter)[0], static_cast<float>(call + 1)) << "after call " << call;
    }
  });
}

// A function with a backward and an in-place update of a buffer (running statistics, a step
// count): the call that traces runs the forward once, and its backward works.
TEST_F(CompileSemantics, AForwardThatUpdatesABufferUpdatesItOncePerCallAndDifferentiates) {
  on_fresh_thread([] {
    const Tensor w = parameter({4, 8}, 5);
    const Tensor steps = on_device(zeros({1}));
    CompiledFunction f = compile(
        [&](const TensorList& in) {
          {
            const autograd::NoGradGuard no_grad;
            add_(steps, ones({1}, TensorOptions().device(kTestDevice)));
          }
          return TensorList{sum(linear(in[0], w))};
        },
        quiet());
    for (int call = 0; call < 4; ++call) {
      const Tensor x = input({3, 8}, 70 + call);
      w.set_grad({});
      sum(linear(x, w)).backward();
      const Tensor eager_grad = w.grad().clone();
      w.set_grad({});
      f(TensorList{x})[0].backward();
      expect_equal(eager_grad, w.grad(), "grad of call " + std::to_string(call));
      EXPECT_EQ(values(steps)[0], static_cast<float>(call + 1)) << "after call " << call;
    }
    EXPECT_EQ(f.stats().traces, 1u);
    EXPECT_EQ(f.stats().eager_calls, 0u);
  });
}

// data<T>() is a host access: a branch on the value it reads is never replayed.
TEST_F(CompileSemantics, ABranchOnARawPointerReadIsSeenAndRunsAsWritten) {
  if (!kTestDevice.is_cpu()) GTEST_SKIP() << "a raw host read needs host memory";
  on_fresh_thread([] {
    auto branchy = [](const Tensor& x) { return x.data<float>()[0] > 0 ? x * 2.0 : x - 1.0; };
    CompiledFunction f = compile(branchy, quiet());
    for (int call = 0; call < 4; ++call) {
      const float sign = call % 2 == 0 ? 1.0f : -1.0f;
      const Tensor x = full({3}, sign);
      expect_equal(branchy(x), f(x), "call " + std::to_string(call));
    }
    EXPECT_EQ(f.stats().eager_calls, 4u);
    ASSERT_EQ(f.stats().eager_reasons.size(), 1u);
    EXPECT_THAT(f.stats().eager_reasons.begin()->first, HasSubstr("data_ptr()"));

    CompileOptions strict = quiet();
    strict.or_error = true;
    CompiledFunction g = compile(branchy, strict);
    EXPECT_THAT(error_of([&] { g(full({3}, 1.0f)); }), HasSubstr("data_ptr()"));
  });
}

// On any device: a raw pointer handed to the caller (who could pass it to a kernel of their own)
// stops the trace, though nothing is read through it here.
TEST_F(CompileSemantics, ARawPointerTakenInsideATraceStopsIt) {
  on_fresh_thread([] {
    std::vector<const void*> pointers;
    CompiledFunction f = compile(
        [&](const Tensor& x) {
          pointers.push_back(x.data_ptr());
          return x * 2.0;
        },
        quiet());
    const Tensor x = input({3}, 4);
    for (int call = 0; call < 3; ++call) expect_equal(x * 2.0, f(x), "call");
    EXPECT_EQ(pointers.size(), 3u);  // once per call, the call that traced included
    EXPECT_EQ(f.stats().eager_calls, 3u);
    EXPECT_THAT(f.stats().eager_reasons.begin()->first, HasSubstr("raw pointer"));
  });
}

TEST_F(CompileSemantics, PrintingATensorIsAHostRead) {
  on_fresh_thread([] {
    std::ostringstream printed;
    CompiledFunction f = compile(
        [&](const Tensor& x) {
          const Tensor y = x + 1.0;
          printed << y;
          return y * 2.0;
        },
        quiet());
    const Tensor x = input({3}, 8);
    for (int call = 0; call < 3; ++call) expect_equal((x + 1.0) * 2.0, f(x), "call");
    EXPECT_EQ(f.stats().eager_calls, 3u);
    EXPECT_THAT(f.stats().eager_reasons.begin()->first, HasSubstr("on the host"));
  });
}

// sum(x) + sum(x[1:]) + ... + sum(x[n-1:]), through a compiled function calling itself.
TEST_F(CompileSemantics, AFunctionThatCallsItselfRunsTheInnerCallsInsideItsTrace) {
  on_fresh_thread([] {
    CompiledFunction tails;
    tails = compile(
        [&](const Tensor& x) {
          const std::int64_t n = x.size(0);
          return n == 1 ? sum(x) : sum(x) + tails(x.narrow(0, 1, n - 1));
        },
        quiet());
    std::function<Tensor(const Tensor&)> expected = [&](const Tensor& x) {
      const std::int64_t n = x.size(0);
      return n == 1 ? sum(x) : sum(x) + expected(x.narrow(0, 1, n - 1));
    };
    for (const std::int64_t n : {4, 4, 4, 3, 4, 3, 3}) {
      const Tensor x = input({n}, static_cast<std::uint64_t>(n));
      expect_equal(expected(x), tails(x), "n = " + std::to_string(n));
    }
    EXPECT_EQ(tails.stats().traces, 2u);  // n = 4 and n = 3, the outer calls only
    EXPECT_EQ(tails.stats().inlined_calls, 3u + 2u);
    EXPECT_EQ(tails.stats().eager_calls, 0u);
    EXPECT_GE(tree_manager(kTestDevice).counters().replays, 3u);
  });
}

// x.reshape(-1) views a contiguous input and copies a transposed one: another trace.
TEST_F(CompileSemantics, ATransposedInputIsANewSignatureNotAFailedReplay) {
  on_fresh_thread([] {
    auto flat = [](const Tensor& x) { return x.reshape({-1}) * 2.0; };
    CompiledFunction f = compile(flat, quiet());
    const Tensor square = input({4, 4}, 12);
    for (int call = 0; call < 3; ++call) expect_equal(flat(square), f(square), "contiguous");
    const Tensor transposed = input({4, 4}, 13).t();
    for (int call = 0; call < 3; ++call)
      expect_equal(flat(transposed), f(transposed), "transposed");
    for (int call = 0; call < 2; ++call) expect_equal(flat(square), f(square), "contiguous again");
    EXPECT_EQ(f.stats().traces, 2u);
    EXPECT_EQ(f.stats().eager_calls, 0u);
    EXPECT_EQ(tree_manager(kTestDevice).counters().eager_fallbacks, 0u);
  });
}

TEST_F(CompileSemantics, SignaturesPastTheRecompileLimitRunAsWrittenSaidOnce) {
  on_fresh_thread([] {
    const Mlp mlp;
    CompileOptions options = quiet();
    options.recompile_limit = 3;
    options.name = "limited";
    std::vector<std::string> lines;
    options.explain = ExplainLevel::On;
    const ExplainSinkGuard sink([&](const std::string& line) { lines.push_back(line); });
    CompiledFunction f = compile([&](const Tensor& x) { return mlp.forward(x); }, options);
    const autograd::NoGradGuard no_grad;
    const GraphStats before = stats();
    for (int round = 0; round < 2; ++round) {
      for (std::int64_t batch = 1; batch <= 6; ++batch) {
        const Tensor x = input({batch, 8}, static_cast<std::uint64_t>(batch));
        expect_equal(mlp.forward(x), f(x), "batch " + std::to_string(batch));
      }
    }
    EXPECT_EQ(f.stats().traces, 3u);
    EXPECT_EQ(f.stats().recompile_limit_calls, 6u);  // batches 4-6, twice
    EXPECT_EQ(f.stats().eager_calls, 6u);
    EXPECT_EQ(stats().recompile_limit_calls - before.recompile_limit_calls, 6u);
    int said = 0;
    for (const std::string& warning : f.warnings())
      said += warning.find("recompile_limit") != std::string::npos;
    EXPECT_EQ(said, 1);
    EXPECT_THAT(::testing::PrintToString(lines), HasSubstr("past the limit of 3"));

    CompileOptions strict = quiet();
    strict.recompile_limit = 1;
    strict.or_error = true;
    CompiledFunction g = compile([&](const Tensor& x) { return mlp.forward(x); }, strict);
    g(input({2, 8}, 1));
    EXPECT_THAT(error_of([&] { g(input({3, 8}, 1)); }), HasSubstr("recompile_limit"));
  });
}

// f(a, b) writes a and reads b: with the same tensor twice, b sees the write.
TEST_F(CompileSemantics, TheSameTensorPassedTwiceGivesEagerResultsOnEveryCall) {
  on_fresh_thread([] {
    auto write_then_read = [](const TensorList& in) {
      add_(in[0], ones({4}, TensorOptions().device(kTestDevice)));
      return TensorList{in[1] * 2.0};
    };
    CompiledFunction f = compile(write_then_read, quiet());
    const Tensor eager_x = input({4}, 21), graphed_x = eager_x.clone();
    const Tensor eager_y = input({4}, 22), graphed_y = eager_y.clone();
    for (int call = 0; call < 4; ++call) {
      const std::string what = "call " + std::to_string(call);
      expect_equal(write_then_read({eager_x, eager_x})[0], f({graphed_x, graphed_x})[0],
                   what + " (x, x)");
      expect_equal(eager_x, graphed_x, what + " x after (x, x)");
      expect_equal(write_then_read({eager_x, eager_y})[0], f({graphed_x, graphed_y})[0],
                   what + " (x, y)");
      expect_equal(eager_x, graphed_x, what + " x after (x, y)");
    }
    EXPECT_EQ(f.stats().traces, 2u);  // aliased inputs are part of the signature

    // Read only: (x, x) and (x, a view of x) trace and replay.
    auto both = [](const TensorList& in) { return TensorList{in[0] * in[1] + in[1]}; };
    CompiledFunction g = compile(both, quiet());
    const Tensor x = input({6}, 23);
    for (int call = 0; call < 3; ++call) {
      expect_equal(both({x, x})[0], g({x, x})[0], "read (x, x)");
      const Tensor head = x.narrow(0, 0, 3), tail = x.narrow(0, 3, 3);
      expect_equal(both({head, tail})[0], g({head, tail})[0], "read (x[:3], x[3:])");
    }
    EXPECT_EQ(g.stats().eager_calls, 0u);
  });
}

// The call that traces stands for the warm-up: the second call records, the third replays,
// with and without gradients.
TEST_F(CompileSemantics, InferenceAndTrainingBothReplayFromTheirThirdCall) {
  on_fresh_thread([] {
    const Mlp mlp;
    CompiledFunction infer = compile([&](const Tensor& x) { return mlp.forward(x); }, quiet());
    const TreeCounters& counters = tree_manager(kTestDevice).counters();
    const autograd::NoGradGuard no_grad;
    const Tensor x = input({4, 8}, 31);
    const std::uint64_t replays_before = counters.replays;
    for (int call = 1; call <= 3; ++call) {
      expect_equal(mlp.forward(x), infer(x), "inference call " + std::to_string(call));
      EXPECT_EQ(counters.recordings, call >= 2 ? 1u : 0u) << "after inference call " << call;
      EXPECT_EQ(counters.replays - replays_before, call >= 3 ? 1u : 0u)
          << "after inference call " << call;
    }
    EXPECT_EQ(counters.warmups, 0u);
  });
  on_fresh_thread([] {
    const Mlp mlp;
    CompiledFunction loss_of = compile(
        [&](const TensorList& in) { return TensorList{cross_entropy(mlp.forward(in[0]), in[1])}; },
        quiet());
    const TreeCounters& counters = tree_manager(kTestDevice).counters();
    for (int call = 1; call <= 3; ++call) {
      loss_of({input({6, 8}, 33), targets(6, 34)})[0].backward();
      EXPECT_EQ(counters.recordings, call >= 2 ? 2u : 0u) << "after training call " << call;
      EXPECT_EQ(counters.replays, call >= 3 ? 2u : 0u) << "after training call " << call;
    }
  });
}

TEST_F(CompileSemantics, ACompiledFunctionIsCalledOnTheThreadOfItsFirstCall) {
  on_fresh_thread([] {
    CompiledFunction f = compile([](const Tensor& x) { return x + 1.0; }, quiet());
    const Tensor x = input({3}, 1);
    f(x);
    std::string message;
    std::thread other([&] { message = error_of([&] { f(x); }); });
    other.join();
    EXPECT_THAT(message, HasSubstr("another thread"));
  });
}

// Two threads capture at once with the same generator: thread 0's capture holds a random op,
// thread 1's does not; while thread 0 still captures, thread 1 draws random numbers eagerly.
// Before captures were per thread, the second begin_capture threw, and the eager draw got
// offsets relative to thread 0's graph.
TEST_F(CompileSemantics, CapturesOnTwoThreadsAreIndependentOfEachOthersRandomOps) {
  Generator& generator = default_generator(kTestDevice);
  std::barrier both_capturing(2), eager_draw_done(2);
  std::vector<float> eager_draw;
  std::exception_ptr errors[2];
  auto capture = [&](int which) {
    bool arrived[2] = {false, false};  // at both_capturing, at eager_draw_done
    try {
      DeviceGraph graph(kTestDevice);
      const Stream stream = new_stream(kTestDevice, "capture tests");
      const Tensor x = on_device(ones({64}));
      Tensor out;
      {
        StreamGuard guard(stream);
        graph.begin_capture(stream);
        arrived[0] = true;
        both_capturing.arrive_and_wait();
        if (which == 0) {
          out = dropout(x, 0.5);
          arrived[1] = true;
          eager_draw_done.arrive_and_wait();  // thread 1 drew while this thread captured
          graph.end_capture();
        } else {
          out = x * 2.0;
          graph.end_capture();
          eager_draw = values(rand({16}, TensorOptions().device(kTestDevice)));
          arrived[1] = true;
          eager_draw_done.arrive_and_wait();
        }
        graph.replay();
        const std::vector<float> first = values(out);
        graph.replay();
        if (which == 0) {
          EXPECT_NE(first, values(out)) << "replays draw fresh numbers";
        } else {
          EXPECT_EQ(first, std::vector<float>(64, 2.0f));
        }
      }
      out = Tensor();
      graph.reset();
      release_stream(stream);
    } catch (...) {
      errors[which] = std::current_exception();
      // Let the other thread go on rather than wait for this one forever.
      if (!arrived[0]) both_capturing.arrive_and_drop();
      if (!arrived[1]) eager_draw_done.arrive_and_drop();
    }
  };
  const std::uint64_t offset_before = generator.offset();
  std::thread a(capture, 0), b(capture, 1);
  a.join();
  b.join();
  for (const std::exception_ptr& error : errors) {
    if (error) std::rethrow_exception(error);
  }
  ASSERT_EQ(eager_draw.size(), 16u);
  for (const float v : eager_draw) EXPECT_TRUE(v >= 0.0f && v < 1.0f) << v;
  EXPECT_GT(generator.offset(), offset_before);  // the eager draw and the replays advanced it
}

// Threads that each train their own compiled function with dropout record their graphs, none
// falls back because of another's recording.
TEST_F(CompileSemantics, CompiledFunctionsOnSeveralThreadsAllRecord) {
  constexpr int kThreads = 3;
  std::vector<TreeCounters> counters(kThreads);
  std::vector<std::thread> threads;
  std::barrier start(kThreads);
  std::exception_ptr errors[kThreads];
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        const Tensor w = parameter({8, 8}, 80 + static_cast<std::uint64_t>(t));
        CompileOptions options = quiet();
        options.or_error = true;  // any fallback fails the test
        options.tree_options->or_error = true;
        CompiledFunction f =
            compile([&](const Tensor& x) { return sum(dropout(linear(x, w), 0.25)); }, options);
        start.arrive_and_wait();
        for (int call = 0; call < 8; ++call) f(input({4, 8}, 90 + call)).backward();
        counters[static_cast<std::size_t>(t)] = tree_manager(kTestDevice).counters();
      } catch (...) {
        errors[t] = std::current_exception();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const std::exception_ptr& error : errors) {
    if (error) std::rethrow_exception(error);
  }
  for (const TreeCounters& c : counters) {
    EXPECT_EQ(c.recordings, 2u);
    EXPECT_EQ(c.eager_fallbacks, 0u);
  }
}

}  // namespace
}  // namespace grove::graphs
