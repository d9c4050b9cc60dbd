// Graph-tree scenarios where a function cannot simply replay: moved static inputs (re-record,
// then eager past the limit), mutated inputs, dynamic shapes, and or_error.
#include <gmock/gmock.h>

#include "tree_test_util.h"

namespace grove::graphs {
namespace {

using TreeFallback = testing::TreeTest;
using ops::add;
using ops::add_;
using testing::any_warning_contains;
using testing::error_of;
using testing::filled;
using ::testing::HasSubstr;
using testing::test_options;
using testing::values;
using testing::with_manager;

// y = x + w with w static (a parameter).
WrappedFunction add_weight() {
  WrappedFunction function;
  function.name = "add_weight";
  function.static_input_indices = {1};
  function.callable = [](const TensorList& in) { return TensorList{add(in[0], in[1])}; };
  return function;
}

TEST_F(TreeFallback, AStaticInputThatStaysPutIsNeverCopied) {
  with_manager([](TreeManager& manager) {
    ManagedFunction f = manager.add_function(add_weight());
    Tensor weight = filled(3, 1.0f);
    for (int call = 0; call < 5; ++call) {
      weight.fill_(static_cast<float>(call));  // new values, same address
      EXPECT_EQ(values(f({filled(3, 1.0f), weight})[0]),
                std::vector<float>(3, 1.0f + static_cast<float>(call)));
    }
    EXPECT_EQ(manager.counters().rerecords, 0u);
    EXPECT_EQ(manager.counters().recordings, 1u);
  });
}

TEST_F(TreeFallback, AMovedStaticInputReRecordsThenRunsEagerlyPastTheLimit) {
  TreeOptions options = test_options();
  options.rerecord_limit = 2;
  with_manager(
      [](TreeManager& manager) {
        ManagedFunction f = manager.add_function(add_weight());
        std::vector<Tensor> weights;  // all kept alive, so every one has its own address
        for (int call = 0; call < 7; ++call) {
          weights.push_back(filled(3, static_cast<float>(call)));
          EXPECT_EQ(values(f({filled(3, 1.0f), weights.back()})[0]),
                    std::vector<float>(3, 1.0f + static_cast<float>(call)))
              << "call " << call;
        }
        // call 0 warms up, call 1 records, calls 2-3 re-record, calls 4-6 run eagerly.
        EXPECT_EQ(manager.counters().rerecords, 2u);
        EXPECT_EQ(manager.counters().recordings, 3u);
        EXPECT_EQ(manager.counters().eager_fallbacks, 3u);
        EXPECT_TRUE(any_warning_contains(manager, "static input moved: input 1 from"));
        EXPECT_TRUE(any_warning_contains(manager, "re-record limit"));
      },
      options);
}

TEST_F(TreeFallback, MutatingAPlainInputRunsEagerlyWithAWarning) {
  with_manager([](TreeManager& manager) {
    WrappedFunction function;
    function.name = "accumulate";
    function.mutated_input_indices = {0};
    function.callable = [](const TensorList& in) {
      add_(in[0], in[1]);
      return TensorList{add(in[0], in[1])};
    };
    ManagedFunction f = manager.add_function(function);
    Tensor total = filled(2, 0.0f);
    for (int call = 1; call <= 4; ++call) {
      TensorList out = f({total, filled(2, 1.0f)});
      EXPECT_EQ(values(total), std::vector<float>(2, static_cast<float>(call)));
      EXPECT_EQ(values(out[0]), std::vector<float>(2, static_cast<float>(call + 1)));
    }
    EXPECT_EQ(manager.counters().recordings, 0u);
    EXPECT_EQ(manager.counters().eager_fallbacks, 4u);
    EXPECT_TRUE(any_warning_contains(manager, "writes to input 0"));
  });
}

TEST_F(TreeFallback, AnUndeclaredMutationIsDetectedDuringTheWarmUp) {
  with_manager([](TreeManager& manager) {
    WrappedFunction function;
    function.name = "sneaky";
    function.callable = [](const TensorList& in) {
      add_(in[0], in[1]);
      return TensorList{add(in[1], in[1])};
    };
    ManagedFunction f = manager.add_function(function);
    Tensor total = filled(2, 0.0f);
    for (int call = 1; call <= 4; ++call) {
      f({total, filled(2, 1.0f)});
      EXPECT_EQ(values(total), std::vector<float>(2, static_cast<float>(call)));
    }
    EXPECT_TRUE(any_warning_contains(manager, "wrote to input 0 during its warm-up"));
    EXPECT_EQ(manager.counters().recordings, 0u);
  });
}

TEST_F(TreeFallback, MutatingAStaticInputIsReplayed) {
  with_manager([](TreeManager& manager) {
    WrappedFunction function;
    function.name = "update";
    function.static_input_indices = {0};
    function.mutated_input_indices = {0};
    function.callable = [](const TensorList& in) {
      add_(in[0], in[1]);
      return TensorList{};
    };
    ManagedFunction f = manager.add_function(function);
    Tensor parameter = filled(2, 0.0f);
    for (int call = 1; call <= 5; ++call) {
      f({parameter, filled(2, 1.0f)});
      EXPECT_EQ(values(parameter), std::vector<float>(2, static_cast<float>(call)));
    }
    EXPECT_EQ(manager.counters().replays, 3u);
    EXPECT_EQ(manager.counters().eager_fallbacks, 0u);
  });
}

WrappedFunction plus_one() {
  WrappedFunction function;
  function.name = "plus_one";
  function.callable = [](const TensorList& in) {
    return TensorList{add(in[0], ones(in[0].sizes(), in[0].device()))};
  };
  return function;
}

TEST_F(TreeFallback, EachInputShapeGetsItsOwnNodesAndTooManyWarn) {
  TreeOptions options = test_options();
  options.dynamic_shape_warn_limit = 3;
  with_manager(
      [](TreeManager& manager) {
        ManagedFunction f = manager.add_function(plus_one());
        for (int round = 0; round < 3; ++round) {
          for (std::int64_t n = 1; n <= 4; ++n) {
            mark_step_begin();
            EXPECT_EQ(values(f({filled(n, 1.0f)})[0]), std::vector<float>(n, 2.0f));
          }
        }
        EXPECT_EQ(manager.num_graph_nodes(), 4u);  // one root per shape
        EXPECT_EQ(manager.roots().size(), 4u);
        EXPECT_TRUE(any_warning_contains(manager, "4 distinct input signatures"));
      },
      options);
}

TEST_F(TreeFallback, SkipDynamicGraphsRunsSignaturesPastTheLimitEagerly) {
  TreeOptions options = test_options();
  options.dynamic_shape_warn_limit = 2;
  options.skip_dynamic_graphs = true;
  with_manager(
      [](TreeManager& manager) {
        ManagedFunction f = manager.add_function(plus_one());
        for (int round = 0; round < 3; ++round) {
          for (std::int64_t n = 1; n <= 4; ++n) {
            EXPECT_EQ(values(f({filled(n, 1.0f)})[0]), std::vector<float>(n, 2.0f));
          }
        }
        EXPECT_EQ(manager.num_graph_nodes(), 2u);
        EXPECT_EQ(manager.counters().eager_fallbacks, 6u);
      },
      options);
}

TEST_F(TreeFallback, OrErrorTurnsAFallbackIntoAnError) {
  TreeOptions options = test_options();
  options.or_error = true;
  with_manager(
      [](TreeManager& manager) {
        WrappedFunction function;
        function.name = "accumulate";
        function.mutated_input_indices = {0};
        function.callable = [](const TensorList& in) {
          add_(in[0], in[0]);
          return TensorList{};
        };
        ManagedFunction f = manager.add_function(function);
        const std::string message = error_of([&] { f({filled(1, 1.0f)}); });
        EXPECT_THAT(message, HasSubstr("'accumulate' cannot run as a graph"));
        EXPECT_THAT(message, HasSubstr("or_error"));
      },
      options);
}

}  // namespace
}  // namespace grove::graphs
