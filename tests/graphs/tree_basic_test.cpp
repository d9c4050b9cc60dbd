// Graph-tree scenarios: warm-up -> record -> replay, correctness on fresh inputs, chains,
// branches, output aliasing, nested calls, dumps.
#include <gmock/gmock.h>

#include "tree_test_util.h"

namespace grove::graphs {
namespace {

using TreeBasic = testing::TreeTest;
using ops::add;
using testing::error_of;
using testing::filled;
using ::testing::HasSubstr;
using testing::values;
using testing::with_manager;

// y = 2 * (x + x): two kernels, one intermediate.
WrappedFunction doubler(std::string name = "doubler") {
  WrappedFunction function;
  function.name = std::move(name);
  function.callable = [](const TensorList& in) {
    return TensorList{ops::mul(add(in[0], in[0]), 2.0f)};
  };
  return function;
}

TEST_F(TreeBasic, FirstCallWarmsUpSecondRecordsThirdReplays) {
  with_manager([](TreeManager& manager) {
    ManagedFunction f = manager.add_function(doubler());
    f({filled(4, 1.0f)});
    EXPECT_EQ(manager.state(), PathState::Warmup);
    EXPECT_EQ(manager.counters().warmups, 1u);
    EXPECT_EQ(manager.counters().recordings, 0u);
    f({filled(4, 1.0f)});
    EXPECT_EQ(manager.state(), PathState::Recording);
    EXPECT_EQ(manager.counters().recordings, 1u);
    f({filled(4, 1.0f)});
    EXPECT_EQ(manager.state(), PathState::Execution);
    EXPECT_EQ(manager.counters().replays, 1u);
    EXPECT_EQ(manager.num_graph_nodes(), 1u);
  });
}

TEST_F(TreeBasic, OutputsEqualEagerOnFreshInputsEveryCall) {
  with_manager([](TreeManager& manager) {
    ManagedFunction f = manager.add_function(doubler());
    for (int call = 0; call < 6; ++call) {
      const float value = 0.5f + static_cast<float>(call);
      TensorList out = f({filled(5, value)});
      EXPECT_EQ(values(out[0]), std::vector<float>(5, 4.0f * value)) << "call " << call;
    }
    EXPECT_EQ(manager.counters().replays, 4u);  // calls 3..6
  });
}

TEST_F(TreeBasic, ChainedFunctionsUseTheOutputInPlaceAndBecomeChildren) {
  with_manager([](TreeManager& manager) {
    ManagedFunction a = manager.add_function(doubler("a"));
    WrappedFunction b_function;
    b_function.name = "b";
    b_function.callable = [](const TensorList& in) { return TensorList{add(in[0], in[0])}; };
    ManagedFunction b = manager.add_function(b_function);
    for (int step = 0; step < 4; ++step) {
      mark_step_begin();
      const float value = static_cast<float>(step + 1);
      TensorList y = a({filled(3, value)});
      TensorList z = b({y[0]});
      EXPECT_EQ(values(z[0]), std::vector<float>(3, 8.0f * value)) << "step " << step;
    }
    ASSERT_EQ(manager.roots().size(), 1u);
    const GraphNode& root = *manager.roots().begin()->second.at(0);
    ASSERT_EQ(root.children().size(), 1u);
    const GraphNode& child = *root.children().begin()->second.at(0);
    EXPECT_EQ(child.parent(), &root);
    EXPECT_EQ(child.managed_inputs(), std::vector<int>{0});  // used in place, not copied
    EXPECT_EQ(manager.counters().recordings, 2u);
    EXPECT_EQ(manager.counters().replays, 4u);
  });
}

TEST_F(TreeBasic, DifferentContinuationsBecomeDifferentChildren) {
  with_manager([](TreeManager& manager) {
    ManagedFunction a = manager.add_function(doubler("a"));
    WrappedFunction plus;
    plus.name = "plus";
    plus.callable = [](const TensorList& in) { return TensorList{add(in[0], in[0])}; };
    WrappedFunction times;
    times.name = "times";
    times.callable = [](const TensorList& in) { return TensorList{ops::mul(in[0], 3.0f)}; };
    ManagedFunction b = manager.add_function(plus);
    ManagedFunction b_prime = manager.add_function(times);
    for (int step = 0; step < 8; ++step) {
      mark_step_begin();
      TensorList y = a({filled(2, 1.0f)});
      const bool even = step % 2 == 0;
      TensorList z = even ? b({y[0]}) : b_prime({y[0]});
      EXPECT_EQ(values(z[0]), std::vector<float>(2, even ? 8.0f : 12.0f)) << "step " << step;
    }
    ASSERT_EQ(manager.roots().size(), 1u);
    const GraphNode& root = *manager.roots().begin()->second.at(0);
    EXPECT_EQ(root.children().size(), 2u);  // a -> plus and a -> times
    EXPECT_EQ(manager.num_graph_nodes(), 3u);
    EXPECT_THAT(manager.dump_text(), HasSubstr("'plus'"));
    EXPECT_THAT(manager.dump_dot(), HasSubstr("n0 -> n"));
  });
}

TEST_F(TreeBasic, OutputAliasesAreRebuiltOnReplay) {
  with_manager([](TreeManager& manager) {
    Tensor weight = filled(4, 10.0f);
    WrappedFunction function;
    function.name = "aliases";
    function.static_input_indices = {1};
    function.callable = [](const TensorList& in) {
      Tensor sum = add(in[0], in[1]);
      // new storage, a view of it, and a view of the static input
      return TensorList{sum, sum.slice(0, 1, 3), in[1].slice(0, 0, 2)};
    };
    ManagedFunction f = manager.add_function(function);
    for (int call = 0; call < 4; ++call) {
      const float value = static_cast<float>(call);
      TensorList out = f({filled(4, value), weight});
      EXPECT_EQ(values(out[0]), std::vector<float>(4, 10.0f + value));
      EXPECT_EQ(values(out[1]), std::vector<float>(2, 10.0f + value));
      EXPECT_TRUE(out[1].is_alias_of(out[0]));
      EXPECT_TRUE(out[2].is_alias_of(weight));
    }
    const GraphNode& node = *manager.roots().begin()->second.at(0);
    EXPECT_EQ(node.output_plans()[0].alias, OutputPlan::Alias::NewStorage);
    EXPECT_EQ(node.output_plans()[1].alias, OutputPlan::Alias::SameCallOutput);
    EXPECT_EQ(node.output_plans()[2].alias, OutputPlan::Alias::StaticInput);
  });
}

TEST_F(TreeBasic, DumpsShowNodesFunctionsOutputsAndThePath) {
  with_manager([](TreeManager& manager) {
    ManagedFunction a = manager.add_function(doubler("a"));
    ManagedFunction b = manager.add_function(doubler("b"));
    TensorList kept;
    for (int step = 0; step < 3; ++step) {
      mark_step_begin();
      TensorList y = a({filled(2, 1.0f)});
      kept = b({y[0]});
    }
    const std::string text = manager.dump_text();
    EXPECT_THAT(text, HasSubstr("state execution, 2 graph nodes"));
    EXPECT_THAT(text, HasSubstr("* graph node 0: function 0 'a', 1 outputs, 0 live"));
    EXPECT_THAT(text, HasSubstr("* graph node 1: function 1 'b', 1 outputs, 1 live"));
    EXPECT_THAT(text, HasSubstr("current node: 1"));
    const std::string dot = manager.dump_dot();
    EXPECT_THAT(dot, HasSubstr("digraph graph_trees {"));
    EXPECT_THAT(dot, HasSubstr("n0 -> n1;"));
    EXPECT_THAT(dot, HasSubstr("style=bold"));  // the current node
  });
}

TEST_F(TreeBasic, NestedManagedCallsRunAsPartOfTheOuterFunction) {
  with_manager([](TreeManager& manager) {
    ManagedFunction inner = manager.add_function(doubler("inner"));
    WrappedFunction outer_function;
    outer_function.name = "outer";
    outer_function.callable = [inner](const TensorList& in) {
      return TensorList{add(inner({in[0]})[0], in[0])};
    };
    ManagedFunction outer = manager.add_function(outer_function);
    for (int call = 0; call < 4; ++call) {
      TensorList out = outer({filled(2, 1.0f)});
      EXPECT_EQ(values(out[0]), std::vector<float>(2, 5.0f));
    }
    EXPECT_EQ(manager.num_graph_nodes(), 1u);  // only the outer function is a tree node
  });
}

TEST_F(TreeBasic, ManagedFunctionsBelongToTheirThread) {
  TreeManager manager(testing::kTestDevice, testing::test_options());
  ManagedFunction f = manager.add_function(doubler());
  std::string message;
  std::thread other([&] { message = error_of([&] { f({filled(1, 1.0f)}); }); });
  other.join();
  EXPECT_THAT(message, HasSubstr("thread whose tree manager created it"));
}

// A function that cannot be captured (it reads data on the host) falls back to eager mode at
// that position, with the capture error as the logged reason, and the manager stays usable.
TEST_F(TreeBasic, AFunctionThatCannotBeCapturedRunsEagerly) {
  with_manager([](TreeManager& manager) {
    WrappedFunction function;
    function.name = "reads_on_host";
    function.callable = [](const TensorList& in) {
      Tensor y = add(in[0], in[0]);
      y.item<float>();  // not allowed while capturing
      return TensorList{y};
    };
    ManagedFunction f = manager.add_function(function);
    f({filled(1, 1.0f)});  // the warm-up is eager: fine
    for (int call = 0; call < 3; ++call) {
      EXPECT_EQ(values(f({filled(1, 3.0f)})[0]), std::vector<float>(1, 6.0f));
    }
    EXPECT_EQ(manager.counters().recordings, 0u);
    EXPECT_EQ(manager.counters().eager_fallbacks, 3u);
    EXPECT_TRUE(
        testing::any_warning_contains(manager, "operation not permitted when stream is capturing"));
    ManagedFunction g = manager.add_function(doubler("g"));
    for (int call = 0; call < 3; ++call) {
      EXPECT_EQ(values(g({filled(2, 1.0f)})[0]), std::vector<float>(2, 4.0f));
    }
  });
}

}  // namespace
}  // namespace grove::graphs
