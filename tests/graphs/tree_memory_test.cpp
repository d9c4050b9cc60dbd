// Graph-tree scenarios about memory: checkpoint restores, pool accounting, a stable loop that
// does not grow, and reset_trees().
#include <gmock/gmock.h>

#include "core/caching_allocator.h"
#include "tree_test_util.h"
#include "tests/sanitizer_scale.h"

namespace grove::graphs {
namespace {

using TreeMemory = testing::TreeTest;
using ops::add;
using testing::error_of;
using testing::filled;
using ::testing::HasSubstr;
using testing::values;
using testing::with_manager;

bool block_allocated(PoolId pool, const void* ptr) {
  for (const SegmentInfo& segment : allocator_for(testing::kTestDevice).snapshot(pool)) {
    for (const BlockInfo& block : segment.blocks) {
      if (block.address == reinterpret_cast<std::uintptr_t>(ptr)) return block.allocated;
    }
  }
  return false;
}

TEST_F(TreeMemory, CheckpointRestoreKeepsLiveOutputsAndFreesDeadOnes) {
  with_manager([](TreeManager& manager) {
    WrappedFunction pair;
    pair.name = "pair";
    pair.callable = [](const TensorList& in) {
      return TensorList{ops::mul(in[0], 2.0f), ops::mul(in[0], 3.0f)};
    };
    WrappedFunction big;
    big.name = "big";
    big.callable = [](const TensorList& in) {
      const Device device = in[0].device();
      return TensorList{add(full({1024}, 5.0f, device), full({1024}, in[0].item<float>(), device))};
    };
    ManagedFunction f = manager.add_function(pair);
    ManagedFunction g = manager.add_function(big);
    for (int step = 0; step < 2; ++step) {
      mark_step_begin();
      f({filled(4, 1.0f)});
    }
    mark_step_begin();
    TensorList out = f({filled(4, 1.0f)});  // a replay
    ASSERT_EQ(manager.state(), PathState::Execution);
    const void* dead_address = out[1].storage()->unchecked_data();
    const void* live_address = out[0].storage()->unchecked_data();
    out[1] = Tensor();                        // the second output dies
    TensorList extra = g({filled(1, 1.0f)});  // a new function: warm-up after a checkpoint
    EXPECT_EQ(manager.counters().checkpoints, 1u);
    EXPECT_EQ(values(out[0]), std::vector<float>(4, 2.0f));  // untouched by g
    EXPECT_EQ(values(extra[0]), std::vector<float>(1024, 6.0f));
    EXPECT_TRUE(block_allocated(manager.pool(), live_address));
    EXPECT_FALSE(block_allocated(manager.pool(), dead_address));
    // The live output now owns its block: dropping it frees the block.
    out.clear();
    EXPECT_FALSE(block_allocated(manager.pool(), live_address));
  });
}

TEST_F(TreeMemory, PoolAccountingCatchesMemoryTheTreesDoNotKnow) {
  with_manager([](TreeManager& manager) {
    auto hidden = std::make_shared<Tensor>();
    WrappedFunction leaky;
    leaky.name = "leaky";
    leaky.callable = [hidden](const TensorList& in) {
      *hidden = ops::mul(in[0], 2.0f);  // kept in the closure, not returned
      return TensorList{add(*hidden, in[0])};
    };
    ManagedFunction f = manager.add_function(leaky);
    const std::string message = error_of([&] { f({filled(2, 1.0f)}); });
    EXPECT_THAT(message, HasSubstr("pool accounting failed after a warm-up"));
    EXPECT_THAT(message, HasSubstr("allocated blocks that are not live outputs: 0x"));
  });
}

TEST_F(TreeMemory, AStableLoopDoesNotGrow) {
  with_manager([](TreeManager& manager) {
    WrappedFunction layer;
    layer.name = "layer";
    layer.static_input_indices = {1};
    layer.callable = [](const TensorList& in) {
      return TensorList{ops::mul(add(in[0], in[1]), 0.5f)};
    };
    ManagedFunction first = manager.add_function(layer);
    ManagedFunction second = manager.add_function(layer);
    Tensor weight = filled(64, 1.0f);
    Tensor input = filled(64, 3.0f);
    AllocatorStats at_step_10;
    std::size_t nodes_at_step_10 = 0;
    // 200 steps under compute-sanitizer (Note [GPU tests under compute-sanitizer]).
    const std::int64_t steps = grove::testing::sanitizer_scaled(1000, 200);
    for (std::int64_t step = 0; step < steps; ++step) {
      mark_step_begin();
      TensorList hidden = first({input, weight});
      TensorList output = second({hidden[0], weight});
      if (step % 100 == 0) {
        EXPECT_EQ(values(output[0]), std::vector<float>(64, 1.5f)) << "step " << step;
      }
      if (step == 10) {
        at_step_10 = allocator_for(testing::kTestDevice).stats();
        nodes_at_step_10 = manager.num_graph_nodes();
      }
    }
    const AllocatorStats at_end = allocator_for(testing::kTestDevice).stats();
    EXPECT_EQ(at_end.reserved_bytes, at_step_10.reserved_bytes);
    EXPECT_EQ(at_end.allocated_bytes, at_step_10.allocated_bytes);
    EXPECT_EQ(at_end.num_segment_allocations, at_step_10.num_segment_allocations);
    EXPECT_EQ(manager.num_graph_nodes(), nodes_at_step_10);
    EXPECT_EQ(manager.counters().recordings, 2u);
  });
}

TEST_F(TreeMemory, ResetTreesFreesThePoolAndPoisonsHeldOutputs) {
  with_manager([](TreeManager& manager) {
    WrappedFunction function;
    function.name = "f";
    function.callable = [](const TensorList& in) { return TensorList{ops::mul(in[0], 2.0f)}; };
    ManagedFunction f = manager.add_function(function);
    f({filled(8, 1.0f)});
    f({filled(8, 1.0f)});
    Tensor held = f({filled(8, 1.0f)})[0];
    const PoolId old_pool = manager.pool();
    ASSERT_TRUE(allocator_for(testing::kTestDevice).pool_exists(old_pool));
    manager.reset_trees();
    EXPECT_FALSE(allocator_for(testing::kTestDevice).pool_exists(old_pool));
    EXPECT_EQ(manager.num_graph_nodes(), 0u);
    EXPECT_EQ(manager.state(), PathState::None);
    EXPECT_THAT(error_of([&] { held.to_vector<float>(); }), HasSubstr("graphed function 'f'"));
    // Usable again: warm-up, record, replay.
    for (int call = 0; call < 3; ++call) {
      EXPECT_EQ(values(f({filled(8, 2.0f)})[0]), std::vector<float>(8, 4.0f));
    }
    EXPECT_EQ(manager.num_graph_nodes(), 1u);
  });
}

}  // namespace
}  // namespace grove::graphs
