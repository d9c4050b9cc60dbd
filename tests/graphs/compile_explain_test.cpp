// Explaining graphed mode (Note [Explaining graphed mode] in graphs/explain.h): the lines a
// compiled training step narrates, in order, and the process-wide counters.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "compile_test_util.h"
#include "graphs/explain.h"
#include "ops/reduce.h"
#include "ops/softmax.h"

namespace grove::graphs {
namespace {

using namespace grove::graphs::testing;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using CompileExplain = testing::TreeTest;

// Runs `steps` compiled MLP steps (loss, backward) and returns what they explained.
std::vector<std::string> explained_steps(int steps, ExplainLevel level) {
  std::vector<std::string> lines;
  on_fresh_thread([&] {
    const ExplainSinkGuard sink([&](const std::string& line) { lines.push_back(line); });
    const Mlp mlp;
    CompileOptions options = quiet();
    options.name = "step";
    options.explain = level;
    CompiledFunction loss_of = compile(
        [&](const TensorList& in) { return TensorList{cross_entropy(mlp.forward(in[0]), in[1])}; },
        options);
    const Tensor x = input({6, 8}, 1);
    const Tensor t = targets(6, 2);
    for (int step = 0; step < steps; ++step) {
      mlp.zero_grad();
      loss_of({x, t})[0].backward();
    }
  });
  return lines;
}

TEST_F(CompileExplain, AThreeStepRunNarratesItsDecisionsInOrder) {
  const std::vector<std::string> lines = explained_steps(3, ExplainLevel::On);
  const std::string on = kTestDevice.is_cpu() ? "" : str(" on ", kTestDevice);
  const std::vector<std::string> expected = {
      // step 1: the trace is the call's eager run (it stands for the warm-up); its backward
      // graph runs interpreted on the values that run left
      str("trace 'step' for (float32[6, 8]", on, ", int64[6]", on,
          "), grad on: forward 4 nodes, backward 9 nodes, 5 values saved for the backward"),
      "backward of 'step' runs its graph interpreted",
      // step 2: both record
      "record 'step forward' as graph node 0 (",  // kernels: as many as the device launches
      "record 'step backward' as graph node 1",
      // step 3: replays only
      "generation ended",
      "replay 'step forward' (graph node 0)",
      "replay 'step backward' (graph node 1)",
  };
  ASSERT_EQ(lines.size(), expected.size()) << ::testing::PrintToString(lines);
  for (std::size_t i = 0; i < lines.size(); ++i) EXPECT_THAT(lines[i], StartsWith(expected[i]));
}

TEST_F(CompileExplain, VerboseAddsTheTracedGraphsFirstLines) {
  const std::vector<std::string> lines = explained_steps(1, ExplainLevel::Verbose);
  ASSERT_GE(lines.size(), 2u);
  EXPECT_THAT(lines[1], StartsWith("  graph step_forward("));
}

TEST_F(CompileExplain, OffSaysNothingAndCountsAllTheSame) {
  const GraphStats before = stats();
  EXPECT_TRUE(explained_steps(3, ExplainLevel::Off).empty());
  const GraphStats after = stats();
  EXPECT_EQ(after.traces - before.traces, 1u);
  EXPECT_EQ(after.trees.warmups - before.trees.warmups, 0u);  // the trace stands for it
  EXPECT_EQ(after.trees.recordings - before.trees.recordings, 2u);
  EXPECT_EQ(after.trees.replays - before.trees.replays, 2u);
  // Step 3 ends step 2's; the second ends when the compiled function is released.
  EXPECT_EQ(after.trees.generations - before.trees.generations, 2u);
  EXPECT_THAT(after.to_text(), HasSubstr("replays"));
}

TEST_F(CompileExplain, AFallbackSaysWhy) {
  std::vector<std::string> lines;
  on_fresh_thread([&] {
    const ExplainSinkGuard sink([&](const std::string& line) { lines.push_back(line); });
    CompileOptions options = quiet();
    options.name = "reads";
    options.explain = ExplainLevel::On;
    CompiledFunction f = compile([](const Tensor& x) { return x * sum(x).item<float>(); }, options);
    f(input({3}, 1));
  });
  ASSERT_EQ(lines.size(), 2u) << ::testing::PrintToString(lines);
  EXPECT_THAT(lines[0], HasSubstr("cannot be replayed"));
  EXPECT_THAT(lines[0], HasSubstr("item()"));
  EXPECT_THAT(lines[1], StartsWith("run 'reads' as written (eagerly): "));
}

// A hand-written managed function under TreeOptions::explain: the re-record names the static
// input that moved, and the checkpoint restore says why.
TEST_F(CompileExplain, AReRecordNamesTheStaticInputThatMoved) {
  std::vector<std::string> lines;
  TreeOptions options = test_options();
  options.explain = true;
  with_manager(
      [&](TreeManager& manager) {
        const ExplainSinkGuard sink([&](const std::string& line) { lines.push_back(line); });
        WrappedFunction function;
        function.name = "scale";
        function.static_input_indices = {1};
        function.input_names = {"x", "weight"};
        function.callable = [](const TensorList& in) { return TensorList{mul(in[0], in[1])}; };
        ManagedFunction f = manager.add_function(function);
        const Tensor weight = input({2}, 1);
        for (int call = 0; call < 3; ++call) f({input({2}, 2), weight});
        f({input({2}, 2), input({2}, 3)});  // a new weight tensor
      },
      options);
  std::string rerecord;
  for (const std::string& line : lines) {
    if (line.starts_with("re-record 'scale'")) rerecord = line;
  }
  EXPECT_THAT(rerecord, HasSubstr("input 1 ('weight')")) << ::testing::PrintToString(lines);
  EXPECT_THAT(lines.back(), StartsWith("record 'scale' as graph node 1"));
}

}  // namespace
}  // namespace grove::graphs
