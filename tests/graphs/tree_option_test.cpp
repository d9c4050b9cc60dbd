// Graph-tree scenarios for the reference's knobs and for cases where an eager fallback must be
// decided cleanly: skip warm-up, capture sizes, forbidding mutation of graph outputs, the
// fallback for a mutated copy of a graph output, several moved static inputs, and capture
// failures that leave nothing behind.
#include <gmock/gmock.h>

#include "core/format.h"
#include "tree_test_util.h"

namespace grove::graphs {
namespace {

using TreeOption = testing::TreeTest;
using ops::add;
using ops::add_;
using testing::any_warning_contains;
using testing::error_of;
using testing::filled;
using ::testing::HasSubstr;
using testing::test_options;
using testing::values;
using testing::with_manager;

WrappedFunction doubled() {
  WrappedFunction function;
  function.name = "doubled";
  function.callable = [](const TensorList& in) { return TensorList{ops::mul(in[0], 2.0f)}; };
  return function;
}

// Writes x += 1 into its input and returns x + 1: recorded as a child of the graph that made x.
WrappedFunction bump() {
  WrappedFunction function;
  function.name = "bump";
  function.mutated_input_indices = {0};
  function.callable = [](const TensorList& in) {
    const Tensor one = ones(in[0].sizes(), in[0].device());
    add_(in[0], one);
    return TensorList{add(in[0], one)};
  };
  return function;
}

std::size_t warnings_about(const TreeManager& manager, const std::string& text) {
  std::size_t count = 0;
  for (const std::string& warning : manager.warnings()) {
    if (warning.find(text) != std::string::npos) ++count;
  }
  return count;
}

TEST_F(TreeOption, AMutatedCopyOfAGraphOutputRunsEagerlyWithOneMessageAndNoReRecord) {
  with_manager([](TreeManager& manager) {
    ManagedFunction produce = manager.add_function(doubled());
    ManagedFunction f = manager.add_function(bump());
    for (int step = 0; step < 3; ++step) {  // warm-up, recording (bump as a child), replay
      mark_step_begin();
      Tensor y = produce({filled(2, 1.0f)})[0];
      EXPECT_EQ(values(f({y})[0]), std::vector<float>(2, 4.0f));
      EXPECT_EQ(values(y), std::vector<float>(2, 3.0f));
    }
    ASSERT_EQ(manager.counters().replays, 2u);
    const TreeCounters before = manager.counters();
    const std::size_t warnings_before = manager.warnings().size();
    for (int call = 0; call < 4; ++call) {
      mark_step_begin();
      Tensor y = produce({filled(2, 1.0f)})[0];
      Tensor copy = y.clone();  // a plain tensor: a graph would write to its own copy of it
      EXPECT_EQ(values(f({copy})[0]), std::vector<float>(2, 4.0f)) << "call " << call;
      EXPECT_EQ(values(copy), std::vector<float>(2, 3.0f));
      EXPECT_EQ(values(y), std::vector<float>(2, 2.0f));
    }
    EXPECT_EQ(manager.counters().eager_fallbacks - before.eager_fallbacks, 4u);
    EXPECT_EQ(manager.counters().fallbacks.at(FallbackReason::MutatedInput), 4u);
    EXPECT_EQ(manager.counters().rerecords - before.rerecords, 0u);
    EXPECT_EQ(manager.counters().checkpoints - before.checkpoints, 0u);
    EXPECT_EQ(manager.counters().recordings, before.recordings);
    EXPECT_EQ(manager.warnings().size() - warnings_before, 1u);
    EXPECT_EQ(warnings_about(manager, "running graphed function 'bump' eagerly: mutated inputs"),
              1u);
  });
}

TEST_F(TreeOption, EveryMovedStaticInputIsNamedWithItsAddresses) {
  TreeOptions options = test_options();
  options.rerecord_limit = 0;
  options.or_error = true;
  with_manager(
      [](TreeManager& manager) {
        WrappedFunction function;
        function.name = "affine";
        function.static_input_indices = {1, 2};
        function.input_names = {"x", "weight", "bias"};
        function.callable = [](const TensorList& in) {
          return TensorList{add(add(in[0], in[1]), in[2])};
        };
        ManagedFunction f = manager.add_function(function);
        Tensor weight = filled(2, 1.0f);
        Tensor bias = filled(2, 2.0f);
        f({filled(2, 0.0f), weight, bias});
        f({filled(2, 0.0f), weight, bias});
        const Tensor new_weight = filled(2, 1.0f);
        const Tensor new_bias = filled(2, 2.0f);
        const std::string message = error_of([&] { f({filled(2, 0.0f), new_weight, new_bias}); });
        EXPECT_THAT(message, HasSubstr("static inputs moved: "));
        EXPECT_THAT(message,
                    HasSubstr(str("input 1 ('weight') from ", format_pointer(weight.data_ptr()),
                                  " to ", format_pointer(new_weight.data_ptr()))));
        EXPECT_THAT(message,
                    HasSubstr(str("input 2 ('bias') from ", format_pointer(bias.data_ptr()), " to ",
                                  format_pointer(new_bias.data_ptr()))));
        EXPECT_THAT(message, HasSubstr("re-recording is off (rerecord_limit = 0)"));
        EXPECT_THAT(message, ::testing::Not(HasSubstr("re-recorded 0 times")));
      },
      options);
}

TEST_F(TreeOption, SkipWarmupRecordsOnTheFirstCall) {
  TreeOptions options = test_options();
  options.skip_warmup = true;
  with_manager(
      [](TreeManager& manager) {
        ManagedFunction f = manager.add_function(doubled());
        EXPECT_EQ(values(f({filled(3, 1.0f)})[0]), std::vector<float>(3, 2.0f));
        EXPECT_EQ(manager.counters().warmups, 0u);
        EXPECT_EQ(manager.counters().recordings, 1u);
        EXPECT_EQ(manager.state(), PathState::Recording);
        EXPECT_EQ(values(f({filled(3, 4.0f)})[0]), std::vector<float>(3, 8.0f));
        EXPECT_EQ(manager.counters().replays, 1u);
      },
      options);
}

TEST_F(TreeOption, CaptureSizesRecordOnlyTheListedSizes) {
  with_manager([](TreeManager& manager) {
    WrappedFunction function = doubled();
    function.dynamic_dims = {{0, 0}};
    function.capture_sizes = {{2}, {5}, {7}};
    ManagedFunction f = manager.add_function(function);
    for (int round = 0; round < 3; ++round) {
      for (std::int64_t n = 1; n <= 9; ++n) {
        const float value = static_cast<float>(n + round);
        EXPECT_EQ(values(f({filled(n, value)})[0]), std::vector<float>(n, 2.0f * value))
            << "size " << n << ", round " << round;
      }
    }
    EXPECT_EQ(manager.num_graph_nodes(), 3u);
    EXPECT_EQ(manager.counters().recordings, 3u);
    EXPECT_EQ(manager.counters().fallbacks.at(FallbackReason::UncapturedSize), 18u);  // 6 x 3
    EXPECT_EQ(warnings_about(manager, "uncaptured size"), 1u);
  });
}

TEST_F(TreeOption, CaptureSizesMustMatchTheDynamicDims) {
  with_manager([](TreeManager& manager) {
    WrappedFunction function = doubled();
    function.capture_sizes = {{2}};
    EXPECT_THAT(error_of([&] { manager.add_function(function); }),
                HasSubstr("has 1 sizes, but the function has 0 dynamic_dims"));
  });
}

TEST_F(TreeOption, ForbiddingGraphOutputMutationRunsTheWriterEagerly) {
  TreeOptions options = test_options();
  options.forbid_graph_output_mutation = true;
  with_manager(
      [](TreeManager& manager) {
        ManagedFunction produce = manager.add_function(doubled());
        ManagedFunction f = manager.add_function(bump());
        for (int step = 0; step < 4; ++step) {
          mark_step_begin();
          Tensor y = produce({filled(2, 1.0f)})[0];
          EXPECT_EQ(values(f({y})[0]), std::vector<float>(2, 4.0f));
          EXPECT_EQ(values(y), std::vector<float>(2, 3.0f));
        }
        EXPECT_EQ(manager.num_graph_nodes(), 1u);  // produce only; bump was never recorded
        // Every call, the warm-up's included: the writer never runs in the pool.
        EXPECT_EQ(manager.counters().fallbacks.at(FallbackReason::MutatedGraphOutput), 4u);
        EXPECT_EQ(warnings_about(manager, "forbid_graph_output_mutation"), 1u);
      },
      options);
}

// The aborted capture writes nothing: the parameter is updated exactly once per call, and the
// pool holds nothing of the capture (debug_checks check it right after the failure).
TEST_F(TreeOption, AFailedCaptureLeavesNoPartialWorkBehind) {
  with_manager([](TreeManager& manager) {
    WrappedFunction function;
    function.name = "update_then_read";
    function.static_input_indices = {0};
    function.mutated_input_indices = {0};
    function.callable = [](const TensorList& in) {
      add_(in[0], in[1]);
      Tensor scratch = ops::mul(in[0], 3.0f);
      scratch.to_vector<float>();  // a host read: not allowed while capturing
      return TensorList{scratch};
    };
    ManagedFunction f = manager.add_function(function);
    Tensor parameter = filled(2, 0.0f);
    for (int call = 1; call <= 3; ++call) {
      EXPECT_EQ(values(f({parameter, filled(2, 1.0f)})[0]),
                std::vector<float>(2, 3.0f * static_cast<float>(call)));
      EXPECT_EQ(values(parameter), std::vector<float>(2, static_cast<float>(call)));
    }
    EXPECT_EQ(manager.counters().recordings, 0u);
    EXPECT_EQ(manager.counters().fallbacks.at(FallbackReason::CaptureFailed), 2u);
    EXPECT_TRUE(any_warning_contains(manager, "capture failed: recording 'update_then_read'"));
  });
}

// Note [Retrying a failed capture]: a capture that fails once (another thread's work, say) is
// tried again after one eager call, and records; one that always fails is tried
// capture_retry_limit more times, waiting 1, 3, ... eager calls between tries, then never again.
TEST_F(TreeOption, AFailedCaptureIsRetriedLaterAndAFailureThatStaysIsFinal) {
  with_manager([](TreeManager& manager) {
    bool fail_once = true;
    WrappedFunction passing;
    passing.name = "fails_once";
    passing.callable = [&](const TensorList& in) {
      if (fail_once && is_capturing(current_stream(testing::kTestDevice))) {
        fail_once = false;
        GROVE_CHECK(false, "a failure that passes");
      }
      return TensorList{ops::mul(in[0], 2.0f)};
    };
    ManagedFunction f = manager.add_function(passing);
    // 1 warms up, 2 fails to record (eager), 3 runs eagerly, 4 records, 5 replays.
    for (int call = 1; call <= 5; ++call) {
      EXPECT_EQ(values(f({filled(2, 1.0f)})[0]), std::vector<float>(2, 2.0f)) << "call " << call;
    }
    EXPECT_EQ(manager.counters().recordings, 1u);
    EXPECT_EQ(manager.counters().replays, 1u);
    EXPECT_EQ(manager.counters().capture_retries, 1u);
    EXPECT_EQ(manager.counters().fallbacks.at(FallbackReason::CaptureFailed), 2u);
  });
  TreeOptions options = test_options();
  options.capture_retry_limit = 2;
  with_manager(
      [](TreeManager& manager) {
        int attempts = 0;
        WrappedFunction always;
        always.name = "reads_on_the_host";
        always.callable = [&](const TensorList& in) {
          attempts += is_capturing(current_stream(testing::kTestDevice)) ? 1 : 0;
          Tensor y = ops::mul(in[0], 2.0f);
          y.to_vector<float>();  // a host read: not allowed while capturing
          return TensorList{y};
        };
        ManagedFunction f = manager.add_function(always);
        // Tries at calls 2, 4 (after 1 eager call) and 8 (after 3); then never again.
        for (int call = 1; call <= 20; ++call) {
          EXPECT_EQ(values(f({filled(2, 1.0f)})[0]), std::vector<float>(2, 2.0f)) << call;
        }
        EXPECT_EQ(attempts, 3);
        EXPECT_EQ(manager.counters().capture_retries, 2u);
        EXPECT_EQ(manager.counters().recordings, 0u);
      },
      options);
}

}  // namespace
}  // namespace grove::graphs
