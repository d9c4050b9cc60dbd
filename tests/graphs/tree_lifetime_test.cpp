// Graph-tree scenarios about a manager's life: managers come and go without end, each giving
// back its stream and pool (Note [A tree manager gives back what it holds]), and the error when
// the streams really run out names what holds them.
#include <gmock/gmock.h>

#include <memory>
#include <optional>

#include "core/caching_allocator.h"
#include "tree_test_util.h"

namespace grove::graphs {
namespace {

using TreeLifetime = testing::TreeTest;
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

TEST_F(TreeLifetime, ManagersComeAndGoAndGiveBackTheirStreamsAndPools) {
  // 1,000 on the CPU (15 times the CPU's 63 streams); 200 on a GPU, where each cycle also
  // records and destroys a CUDA graph.
  const int cycles = testing::kTestDevice.is_cuda() ? 200 : 1000;
  const CachingAllocator& allocator = allocator_for(testing::kTestDevice);
  const std::size_t streams_before = streams_in_use(testing::kTestDevice);
  const std::size_t pools_before = allocator.num_pools();
  for (int cycle = 0; cycle < cycles; ++cycle) {
    Tensor kept;  // an output that outlives its manager
    with_manager([&](TreeManager& manager) {
      EXPECT_EQ(streams_in_use(testing::kTestDevice), streams_before + 1);
      ManagedFunction f = manager.add_function(doubled());
      for (int call = 0; call < 3; ++call) {  // warm-up, recording, replay
        kept = f({filled(4, static_cast<float>(cycle))})[0];
        EXPECT_EQ(values(kept), std::vector<float>(4, 2.0f * static_cast<float>(cycle)));
      }
      EXPECT_EQ(manager.counters().replays, 1u);
    });
    ASSERT_EQ(streams_in_use(testing::kTestDevice), streams_before) << "cycle " << cycle;
    // The manager's pool is gone, and the output kept from it is poisoned, not dangling.
    ASSERT_EQ(allocator.num_pools(), pools_before) << "cycle " << cycle;
    EXPECT_THAT(error_of([&] { kept.to_vector<float>(); }),
                HasSubstr("graphed function 'doubled'"));
  }
}

TEST_F(TreeLifetime, TheThreadsManagerGivesBackItsStreamWhenTheThreadEnds) {
  const std::size_t streams_before = streams_in_use(testing::kTestDevice);
  std::size_t streams_during = 0;
  std::thread([&] {
    ManagedFunction f = tree_manager(testing::kTestDevice).add_function(doubled());
    EXPECT_EQ(values(f({filled(2, 1.0f)})[0]), std::vector<float>(2, 2.0f));
    streams_during = streams_in_use(testing::kTestDevice);
  }).join();
  EXPECT_EQ(streams_during, streams_before + 1);
  EXPECT_EQ(streams_in_use(testing::kTestDevice), streams_before);
}

TEST_F(TreeLifetime, RunningOutOfStreamsNamesTheManagersThatHoldThem) {
  // A GPU has 1,023 streams to hand out; the CPU's 63 are few enough to use up here.
  if (testing::kTestDevice.is_cuda()) GTEST_SKIP() << "the CPU's streams are the ones used up";
  const std::size_t streams_before = streams_in_use(kCPU);
  std::vector<std::unique_ptr<TreeManager>> managers;
  std::string message;
  while (message.empty() && managers.size() < kMaxCpuStreams) {
    message = error_of([&] { managers.push_back(std::make_unique<TreeManager>(kCPU)); });
  }
  EXPECT_EQ(managers.size() + streams_before, kMaxCpuStreams - 1);
  EXPECT_THAT(message, HasSubstr("all 63 streams of cpu besides its default stream are in use"));
  EXPECT_THAT(message, HasSubstr(str(managers.size(), " by graph-tree managers")));
  EXPECT_THAT(message, HasSubstr("destroy the graph-tree managers you are done with"));
  managers.clear();
  EXPECT_EQ(streams_in_use(kCPU), streams_before);
  TreeManager another(kCPU);  // the streams are back
  EXPECT_EQ(streams_in_use(kCPU), streams_before + 1);
}

TEST_F(TreeLifetime, ReleasingTheLastFunctionFreesThePoolAndPoisonsHeldOutputs) {
  with_manager([](TreeManager& manager) {
    std::optional<ManagedFunction> f = manager.add_function(doubled());
    Tensor held;
    for (int call = 0; call < 3; ++call) held = (*f)({filled(4, 1.0f)})[0];
    ManagedFunction copy = *f;  // copies share one handle
    const PoolId pool = manager.pool();
    f.reset();
    EXPECT_EQ(manager.num_graph_nodes(), 1u);  // a copy is still alive
    copy = ManagedFunction();
    EXPECT_FALSE(allocator_for(testing::kTestDevice).pool_exists(pool));
    EXPECT_EQ(manager.num_graph_nodes(), 0u);
    EXPECT_THAT(error_of([&] { held.to_vector<float>(); }),
                HasSubstr("graphed function 'doubled'"));
    // The manager stays usable.
    ManagedFunction g = manager.add_function(doubled());
    for (int call = 0; call < 3; ++call) {
      EXPECT_EQ(values(g({filled(2, 3.0f)})[0]), std::vector<float>(2, 6.0f));
    }
    EXPECT_EQ(manager.counters().replays, 2u);
  });
}

TEST_F(TreeLifetime, ReleasingOneFunctionFreesItsRecordingsAndClosureOnly) {
  with_manager([](TreeManager& manager) {
    auto token = std::make_shared<int>(0);  // kept in f's closure
    WrappedFunction function = doubled();
    function.name = "f";
    function.callable = [token](const TensorList& in) { return TensorList{ops::mul(in[0], 2.0f)}; };
    std::optional<ManagedFunction> f = manager.add_function(std::move(function));
    ManagedFunction g = manager.add_function(doubled());
    for (int step = 0; step < 3; ++step) {
      (*f)({filled(2, 1.0f)});
      g({filled(2, 1.0f)});
    }
    ASSERT_EQ(manager.roots().size(), 2u);
    EXPECT_EQ(token.use_count(), 2);
    f.reset();
    EXPECT_EQ(token.use_count(), 1);  // the closure is gone
    ASSERT_EQ(manager.roots().size(), 1u);
    EXPECT_EQ(manager.roots().begin()->second.front()->function().wrapped->name, "doubled");
    const std::uint64_t replays = manager.counters().replays;
    EXPECT_EQ(values(g({filled(2, 5.0f)})[0]), std::vector<float>(2, 10.0f));
    EXPECT_EQ(manager.counters().replays, replays + 1);
  });
}

TEST_F(TreeLifetime, AHandleDroppedOnAnotherThreadIsReleasedAtTheNextCall) {
  with_manager([](TreeManager& manager) {
    std::optional<ManagedFunction> f = manager.add_function(doubled());
    ManagedFunction g = manager.add_function(doubled());
    for (int call = 0; call < 3; ++call) (*f)({filled(2, 1.0f)});
    std::thread([&] { f.reset(); }).join();
    EXPECT_EQ(manager.num_graph_nodes(), 1u);  // not yet: the manager's thread was busy
    g({filled(3, 1.0f)});
    EXPECT_EQ(manager.num_graph_nodes(), 0u);
  });
}

}  // namespace
}  // namespace grove::graphs
