// Graph-tree scenarios at the edges: memory the trees cannot own, mutation seen only later,
// outputs that alias copied inputs, and version counters bumped by replays.
#include <gmock/gmock.h>

#include "tree_test_util.h"

namespace grove::graphs {
namespace {

using TreeEdge = testing::TreeTest;
using ops::add;
using ops::add_;
using testing::error_of;
using testing::filled;
using ::testing::HasSubstr;
using testing::values;
using testing::with_manager;

TEST_F(TreeEdge, AWarmUpReturningATensorFromItsClosureIsAnError) {
  with_manager([](TreeManager& manager) {
    Tensor weight = filled(2, 1.0f);  // not passed as an input
    WrappedFunction function;
    function.name = "hidden_weight";
    function.callable = [weight](const TensorList& in) {
      return TensorList{add(in[0], weight), weight.view({2})};
    };
    ManagedFunction f = manager.add_function(function);
    EXPECT_THAT(error_of([&] { f({filled(2, 1.0f)}); }),
                HasSubstr("output 1 was neither allocated by the function nor is it one of its "
                          "inputs"));
    EXPECT_EQ(values(weight), std::vector<float>(2, 1.0f));  // untouched, not poisoned
  });
}

TEST_F(TreeEdge, PoolMemoryKeptInAClosureIsRefusedAtACheckpoint) {
  TreeOptions options = testing::test_options();
  options.debug_checks = false;  // the checkpoint's own check must catch it
  with_manager(
      [](TreeManager& manager) {
        auto stash = std::make_shared<Tensor>();
        WrappedFunction stashing;
        stashing.name = "stashing";
        stashing.callable = [stash](const TensorList& in) {
          *stash = ops::mul(in[0], 3.0f);  // pool memory kept across calls
          return TensorList{ops::mul(in[0], 2.0f)};
        };
        WrappedFunction other;
        other.name = "other";
        other.callable = [](const TensorList& in) { return TensorList{add(in[0], in[0])}; };
        ManagedFunction r = manager.add_function(stashing);
        ManagedFunction g = manager.add_function(other);
        for (int step = 0; step < 2; ++step) {
          mark_step_begin();
          r({filled(2, 1.0f)});
        }
        mark_step_begin();
        TensorList out = r({filled(2, 1.0f)});  // a replay; the next call needs a checkpoint
        EXPECT_THAT(error_of([&] { g({out[0]}); }),
                    HasSubstr("is held by a tensor that is not an output of the current path"));
      },
      options);
}

// The first time `update` runs its mutated input is a graph output (fine to record); later a
// plain tensor is passed: recording would write to a private copy, so it must run eagerly.
TEST_F(TreeEdge, MutationOfAPlainInputSeenOnlyLaterRunsEagerly) {
  with_manager([](TreeManager& manager) {
    WrappedFunction produce;
    produce.name = "produce";
    produce.callable = [](const TensorList& in) { return TensorList{ops::mul(in[0], 1.0f)}; };
    WrappedFunction update;
    update.name = "update";
    update.mutated_input_indices = {0};
    update.callable = [](const TensorList& in) {
      add_(in[0], in[1]);
      return TensorList{};
    };
    ManagedFunction r = manager.add_function(produce);
    ManagedFunction f = manager.add_function(update);
    for (int step = 0; step < 3; ++step) {
      mark_step_begin();
      TensorList y = r({filled(2, 1.0f)});
      f({y[0], filled(2, 1.0f)});
      EXPECT_EQ(values(y[0]), std::vector<float>(2, 2.0f)) << "step " << step;
    }
    mark_step_begin();
    r({filled(2, 1.0f)});
    Tensor plain = filled(2, 5.0f);
    f({plain, filled(2, 1.0f)});
    EXPECT_EQ(values(plain), std::vector<float>(2, 6.0f));
  });
}

TEST_F(TreeEdge, AnOutputThatIsAViewOfACopiedInputStaysAViewOfTheCallersTensor) {
  with_manager([](TreeManager& manager) {
    WrappedFunction function;
    function.name = "view_of_input";
    function.callable = [](const TensorList& in) {
      return TensorList{in[0].view({2, 2}), ops::mul(in[0], 2.0f)};
    };
    ManagedFunction f = manager.add_function(function);
    for (int call = 0; call < 4; ++call) {
      Tensor x = filled(4, static_cast<float>(call));
      TensorList out = f({x});
      x.fill_(100.0f);  // eagerly, out[0] is x: it must show the new values
      EXPECT_EQ(values(out[0]), std::vector<float>(4, 100.0f)) << "call " << call;
      EXPECT_TRUE(out[0].is_alias_of(x));
      EXPECT_EQ(values(out[1]), std::vector<float>(4, 2.0f * static_cast<float>(call)));
    }
    EXPECT_EQ(manager.counters().replays, 2u);
  });
}

TEST_F(TreeEdge, ReplaysBumpTheVersionOfInputsTheyMutate) {
  with_manager([](TreeManager& manager) {
    WrappedFunction function;
    function.name = "step";
    function.static_input_indices = {0};
    function.mutated_input_indices = {0};
    function.callable = [](const TensorList& in) {
      add_(in[0], in[1]);
      return TensorList{};
    };
    ManagedFunction f = manager.add_function(function);
    Tensor parameter = filled(2, 0.0f);
    for (int call = 0; call < 5; ++call) {
      const std::uint64_t before = parameter.version();
      f({parameter, filled(2, 1.0f)});
      EXPECT_GT(parameter.version(), before) << "call " << call;
    }
    EXPECT_EQ(manager.counters().replays, 3u);
  });
}

TEST_F(TreeEdge, OutOfRangeInputIndicesAreErrors) {
  with_manager([](TreeManager& manager) {
    WrappedFunction function;
    function.name = "bad_indices";
    function.static_input_indices = {3};
    function.callable = [](const TensorList& in) { return TensorList{in[0]}; };
    ManagedFunction f = manager.add_function(function);
    EXPECT_THAT(error_of([&] { f({filled(1, 1.0f)}); }),
                HasSubstr("input index 3 in static_input_indices is out of range for a call "
                          "with 1 inputs"));
  });
}

TEST_F(TreeEdge, AWarmUpChainThatCannotEndIsCapped) {
  TreeOptions options = testing::test_options();
  options.max_warmup_chain = 5;
  with_manager(
      [](TreeManager& manager) {
        WrappedFunction function;
        function.name = "forward";
        function.mode = FunctionMode::Forward;
        function.callable = [](const TensorList& in) { return TensorList{ops::mul(in[0], 2.0f)}; };
        ManagedFunction f = manager.add_function(function);
        std::vector<Tensor> kept;  // outputs kept, backward never run: the path cannot end
        for (int call = 0; call < 20; ++call) {
          kept.push_back(f({filled(1, static_cast<float>(call))})[0]);
          EXPECT_EQ(values(kept.back()), std::vector<float>(1, 2.0f * static_cast<float>(call)));
        }
        EXPECT_EQ(manager.counters().warmups, 5u);
        EXPECT_EQ(manager.counters().eager_fallbacks, 15u);
        EXPECT_TRUE(testing::any_warning_contains(manager, "warm-up chain limit"));
      },
      options);
}

TEST_F(TreeEdge, CallingAFunctionWhoseManagerIsGoneIsAClearError) {
  ManagedFunction orphan;
  {
    TreeManager manager(testing::kTestDevice, testing::test_options());
    WrappedFunction function;
    function.name = "f";
    function.callable = [](const TensorList& in) { return TensorList{ops::mul(in[0], 2.0f)}; };
    orphan = manager.add_function(function);
  }
  EXPECT_THAT(error_of([&] { orphan({filled(1, 1.0f)}); }),
              HasSubstr("tree manager no longer exists"));
  EXPECT_THAT(error_of([] { ManagedFunction()({}); }), HasSubstr("this ManagedFunction is empty"));
}

}  // namespace
}  // namespace grove::graphs
