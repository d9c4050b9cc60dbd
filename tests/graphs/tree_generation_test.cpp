// Graph-tree scenarios about steps: generations, poisoned outputs, mark_step_begin, pending
// backwards, and paths that end early because their outputs died.
#include <gmock/gmock.h>

#include "tree_test_util.h"

namespace grove::graphs {
namespace {

using TreeGeneration = testing::TreeTest;
using ops::add;
using testing::any_warning_contains;
using testing::error_of;
using testing::filled;
using ::testing::HasSubstr;
using testing::values;
using testing::with_manager;

WrappedFunction twice(std::string name, FunctionMode mode = FunctionMode::Inference) {
  WrappedFunction function;
  function.name = std::move(name);
  function.mode = mode;
  function.callable = [](const TensorList& in) { return TensorList{ops::mul(in[0], 2.0f)}; };
  return function;
}

void expect_poisoned(const Tensor& tensor, const std::string& function_name) {
  const std::string message = error_of([&] { tensor.to_vector<float>(); });
  EXPECT_THAT(message, HasSubstr("output 0 of graphed function '" + function_name + "'"));
  // Note [Which op made an output]: ops::mul, seen in the warm-up and in the recording.
  EXPECT_THAT(message, HasSubstr("made by op 'mul'"));
  EXPECT_THAT(message, HasSubstr("clone()"));
  EXPECT_THAT(message, HasSubstr("mark_step_begin()"));
}

TEST_F(TreeGeneration, AnOutputKeptAcrossANewCallIsPoisoned) {
  with_manager([](TreeManager& manager) {
    ManagedFunction f = manager.add_function(twice("f"));
    Tensor warmup_output = f({filled(2, 1.0f)})[0];
    const int recording_line = __LINE__ + 1;
    Tensor recorded_output = f({filled(2, 2.0f)})[0];  // new generation: frees the warm-up's
    expect_poisoned(warmup_output, "f");
    EXPECT_EQ(values(recorded_output), std::vector<float>(2, 4.0f));
    Tensor replayed = f({filled(2, 3.0f)})[0];
    expect_poisoned(recorded_output, "f");
    EXPECT_THAT(
        error_of([&] { recorded_output.to_vector<float>(); }),
        HasSubstr(str("returned by the call at tree_generation_test.cpp:", recording_line)));
    EXPECT_EQ(values(replayed), std::vector<float>(2, 6.0f));
    EXPECT_GE(manager.counters().poisoned_outputs, 2u);
  });
}

// PyTorch returns the same cached tensor from every replay, so an output kept from an earlier
// step silently shows the next step's values. grove hands out fresh handles and poisons the old.
TEST_F(TreeGeneration, ReplayOutputsFromAnEarlierStepNeverShowNewValues) {
  with_manager([](TreeManager& manager) {
    ManagedFunction f = manager.add_function(twice("f"));
    f({filled(2, 1.0f)});
    f({filled(2, 1.0f)});
    Tensor first_replay = f({filled(2, 5.0f)})[0];
    Tensor view_of_it = first_replay.slice(0, 0, 1);
    EXPECT_EQ(values(first_replay), std::vector<float>(2, 10.0f));
    Tensor second_replay = f({filled(2, 7.0f)})[0];
    EXPECT_FALSE(second_replay.is_alias_of(first_replay));  // a new handle over the same memory
    EXPECT_EQ(second_replay.data_ptr(), first_replay.storage()->unchecked_data());
    expect_poisoned(first_replay, "f");
    expect_poisoned(view_of_it, "f");
    EXPECT_EQ(values(second_replay), std::vector<float>(2, 14.0f));
  });
}

TEST_F(TreeGeneration, PoisonedOutputsStillReportTheirMetadata) {
  with_manager([](TreeManager& manager) {
    ManagedFunction f = manager.add_function(twice("f"));
    Tensor old = f({filled(3, 1.0f)})[0];
    f({filled(3, 1.0f)});
    EXPECT_EQ(old.sizes(), IntArrayRef({3}));  // metadata is fine, data is not
    EXPECT_TRUE(old.storage()->has_access_error());
    EXPECT_THAT(error_of([&] { old.clone(); }), HasSubstr("graphed function 'f'"));
  });
}

TEST_F(TreeGeneration, ACloneTakenBeforeTheNextCallSurvives) {
  with_manager([](TreeManager& manager) {
    ManagedFunction f = manager.add_function(twice("f"));
    for (int call = 0; call < 4; ++call) {
      Tensor kept = f({filled(2, static_cast<float>(call))})[0].clone();
      f({filled(2, 100.0f)});
      EXPECT_EQ(values(kept), std::vector<float>(2, 2.0f * static_cast<float>(call)));
    }
  });
}

TEST_F(TreeGeneration, MarkStepBeginDelimitsSteps) {
  with_manager([](TreeManager& manager) {
    ManagedFunction f = manager.add_function(twice("f"));
    mark_step_begin();
    Tensor first = f({filled(2, 1.0f)})[0];
    Tensor second = f({filled(2, 2.0f)})[0];  // same step: `first` stays valid
    EXPECT_EQ(values(first), std::vector<float>(2, 2.0f));
    EXPECT_EQ(values(second), std::vector<float>(2, 4.0f));
    Tensor third = f({filled(2, 3.0f)})[0];  // still the same step
    EXPECT_EQ(values(first), std::vector<float>(2, 2.0f));
    mark_step_begin();
    Tensor fourth = f({filled(2, 4.0f)})[0];
    expect_poisoned(first, "f");
    expect_poisoned(third, "f");
    EXPECT_EQ(values(fourth), std::vector<float>(2, 8.0f));
  });
}

TEST_F(TreeGeneration, PendingBackwardKeepsThePathAndWarnsOnce) {
  with_manager([](TreeManager& manager) {
    ManagedFunction forward = manager.add_function(twice("forward", FunctionMode::Forward));
    ManagedFunction backward = manager.add_function(twice("backward", FunctionMode::Backward));
    std::vector<Tensor> kept;
    for (int call = 0; call < 4; ++call) {
      kept.push_back(forward({filled(2, static_cast<float>(call))})[0]);
      EXPECT_TRUE(manager.pending_backwards());
    }
    // Nothing was freed: every output is intact.
    for (int call = 0; call < 4; ++call) {
      EXPECT_EQ(values(kept[static_cast<std::size_t>(call)]),
                std::vector<float>(2, 2.0f * static_cast<float>(call)));
    }
    EXPECT_EQ(manager.counters().generations, 0u);
    EXPECT_TRUE(any_warning_contains(manager, "waiting for its backward"));
    backward({kept.back()});
    EXPECT_FALSE(manager.pending_backwards());
    forward({filled(2, 9.0f)});  // a backward ran: the next call starts a new generation
    EXPECT_EQ(manager.counters().generations, 1u);
    expect_poisoned(kept.front(), "forward");
  });
}

TEST_F(TreeGeneration, DeadOutputsLetThePathEndEarly) {
  with_manager([](TreeManager& manager) {
    ManagedFunction f = manager.add_function(twice("f"));
    mark_step_begin();  // one step for all calls below: no generation can end the path
    for (int call = 0; call < 5; ++call) {
      // The output dies at once, so the path may end and the root replay again.
      EXPECT_EQ(values(f({filled(2, 1.0f)})[0]), std::vector<float>(2, 2.0f));
    }
    EXPECT_EQ(manager.counters().generations, 0u);  // no generation ever ended a path
    EXPECT_EQ(manager.counters().recordings, 1u);   // a single root, replayed
    EXPECT_EQ(manager.counters().replays, 3u);
    EXPECT_EQ(manager.num_graph_nodes(), 1u);
  });
}

TEST_F(TreeGeneration, CanStartNewGenerationFollowsInvocationsAndBackwards) {
  with_manager([](TreeManager& manager) {
    ManagedFunction inference = manager.add_function(twice("inference"));
    ManagedFunction forward = manager.add_function(twice("forward", FunctionMode::Forward));
    EXPECT_FALSE(manager.can_start_new_generation());  // nothing ran yet
    inference({filled(1, 1.0f)});
    EXPECT_FALSE(manager.can_start_new_generation());  // still the same invocation
    {
      InvocationScope next_call;  // what the next top-level call opens
      EXPECT_TRUE(manager.can_start_new_generation());
    }
    Tensor kept = forward({filled(1, 1.0f)})[0];
    {
      InvocationScope next_call;
      EXPECT_FALSE(manager.can_start_new_generation());  // a backward is pending
    }
    kept = Tensor();  // the forward's output died: its backward can never come
    InvocationScope next_call;
    EXPECT_TRUE(manager.can_start_new_generation());
  });
}

// mod2(mod1(x)) then both backwards: the second backward still sees mod1's outputs, because
// backward calls do not start generations.
TEST_F(TreeGeneration, TwoBackwardsInARowBelongToTheirForwardsStep) {
  with_manager([](TreeManager& manager) {
    ManagedFunction forward1 = manager.add_function(twice("forward1", FunctionMode::Forward));
    ManagedFunction forward2 = manager.add_function(twice("forward2", FunctionMode::Forward));
    ManagedFunction backward2 = manager.add_function(twice("backward2", FunctionMode::Backward));
    ManagedFunction backward1 = manager.add_function(twice("backward1", FunctionMode::Backward));
    for (int step = 0; step < 4; ++step) {
      Tensor s1 = forward1({filled(2, 1.0f)})[0];
      Tensor s2 = forward2({s1})[0];
      EXPECT_EQ(values(backward2({s2})[0]), std::vector<float>(2, 8.0f)) << "step " << step;
      EXPECT_EQ(values(backward1({s1})[0]), std::vector<float>(2, 4.0f)) << "step " << step;
    }
  });
}

// A forward whose backward never runs (its outputs dropped) must not keep later calls from
// starting new steps, or every call would be another warm-up.
TEST_F(TreeGeneration, AnAbandonedForwardDoesNotBlockLaterSteps) {
  with_manager([](TreeManager& manager) {
    ManagedFunction forward = manager.add_function(twice("forward", FunctionMode::Forward));
    ManagedFunction evaluate = manager.add_function(twice("evaluate"));
    forward({filled(2, 1.0f)});  // output dropped, backward never called
    Tensor previous;
    for (int call = 0; call < 6; ++call) previous = evaluate({filled(2, 1.0f)})[0];
    EXPECT_EQ(manager.counters().recordings, 1u);
    EXPECT_GE(manager.counters().replays, 3u);
  });
}

}  // namespace
}  // namespace grove::graphs
