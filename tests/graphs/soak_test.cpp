// Soak: 10,000 graphed training steps of a small MLP and a small gpt on the CPU, in both graphed
// modes (the whole step as one graph, as `grove train --mode graphed` runs it; and a compiled
// forward/backward with an eager optimizer), through bench/soak_runner.h, the loop that
// soak_bench runs at the real shapes on a GPU. After warm-up (step 100) every memory figure must
// stay exactly equal at steps 1,000 and 10,000: a replay allocates nothing, and the eager work
// around it (batches, the learning rate, the loss log, in graphed mode the gradients and the
// optimizer) allocates and frees the same blocks every step, so the caching allocator's layout
// repeats exactly. Then, with the compiled functions gone, the graph pool is released and the
// allocator is back to where it started.
//
// Label `training` (tests/graphs/CMakeLists.txt): about 10 s in a release build, too slow for
// the sanitizers' debug pass.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "bench/soak_runner.h"

namespace grove::graphs {
namespace {

struct SoakCase {
  const char* model;
  soak::SoakMode mode;
  // Graphs replayed per step: one whole step, or a forward and a backward.
  std::uint64_t graphs_per_step;
};

class Soak : public ::testing::TestWithParam<SoakCase> {};

TEST_P(Soak, MemoryIsFlatAfterWarmupAndGivenBackAtTheEnd) {
  const SoakCase& param = GetParam();
  CachingAllocator& allocator = allocator_for(kCPU);
  tree_manager(kCPU);  // this thread's manager and its (empty) pool exist before and after
  const AllocatorStats before = allocator.stats();
  const std::size_t pools_before = allocator.num_pools();

  soak::SoakConfig config;
  config.model = param.model;
  config.mode = param.mode;
  config.small = true;
  config.steps = 10000;
  config.sample_at = {1, 100, 1000, 10000};
  const std::vector<soak::MemoryFigures> samples = soak::run_soak(config);
  ASSERT_EQ(samples.size(), 4u);
  SCOPED_TRACE(soak::format_table(samples));
  const soak::MemoryFigures& warm = samples[1];  // step 100

  EXPECT_GT(warm.recordings, 0u) << "nothing was recorded: the soak would not test the graphs";
  EXPECT_GT(warm.graph_pool_bytes, 0u);
  EXPECT_GT(warm.pool_blocks, 0u);
  for (const soak::MemoryFigures& later : {samples[2], samples[3]}) {
    SCOPED_TRACE(str("step ", later.step, " against step ", warm.step));
    // The device allocator: exactly the same bytes and the same segments and blocks.
    EXPECT_EQ(later.allocated_bytes, warm.allocated_bytes);
    EXPECT_EQ(later.reserved_bytes, warm.reserved_bytes);
    EXPECT_EQ(later.private_pool_bytes, warm.private_pool_bytes);
    EXPECT_EQ(later.segments, warm.segments);
    EXPECT_EQ(later.blocks, warm.blocks);
    EXPECT_EQ(later.allocated_blocks, warm.allocated_blocks);
    EXPECT_EQ(later.num_segment_allocations, warm.num_segment_allocations);
    // The tree manager's pool and every graph pool.
    EXPECT_EQ(later.graph_pool_bytes, warm.graph_pool_bytes);
    EXPECT_EQ(later.pool_segments, warm.pool_segments);
    EXPECT_EQ(later.pool_blocks, warm.pool_blocks);
    EXPECT_EQ(later.pool_allocated_blocks, warm.pool_allocated_blocks);
    // Nothing recorded, traced, warmed up or run eagerly again; every step replayed.
    EXPECT_EQ(later.graph_nodes, warm.graph_nodes);
    EXPECT_EQ(later.recordings, warm.recordings);
    EXPECT_EQ(later.warmups, warm.warmups);
    EXPECT_EQ(later.traces, warm.traces);
    EXPECT_EQ(later.eager_fallbacks, warm.eager_fallbacks);
    EXPECT_EQ(later.replays - warm.replays,
              static_cast<std::uint64_t>(later.step - warm.step) * param.graphs_per_step);
    // The host heap of this thread's arena, within the noise of glibc's caches
    // (soak::kHostHeapNoiseBytes says why it is not exactly flat).
    EXPECT_LT(std::abs(static_cast<std::ptrdiff_t>(later.host_heap_bytes) -
                       static_cast<std::ptrdiff_t>(warm.host_heap_bytes)),
              static_cast<std::ptrdiff_t>(soak::kHostHeapNoiseBytes));
    EXPECT_EQ(soak::growth(warm, later), "");  // the same checks, as one line for the record
    EXPECT_TRUE(std::isfinite(later.loss));
  }

  // The compiled functions died with the run: their graphs and pool are gone and every byte
  // the run took is back (the model, its optimizer and the batches died with it too).
  const AllocatorStats after = allocator.stats();
  EXPECT_EQ(allocator.num_pools(), pools_before);
  EXPECT_EQ(after.allocated_bytes, before.allocated_bytes);
  EXPECT_EQ(after.private_pool_bytes, before.private_pool_bytes);
}

INSTANTIATE_TEST_SUITE_P(SmallShapes, Soak,
                         ::testing::Values(SoakCase{"mlp", soak::SoakMode::GraphedStep, 1},
                                           SoakCase{"mlp", soak::SoakMode::Graphed, 2},
                                           SoakCase{"gpt", soak::SoakMode::GraphedStep, 1},
                                           SoakCase{"gpt", soak::SoakMode::Graphed, 2}),
                         [](const ::testing::TestParamInfo<SoakCase>& info) {
                           return std::string(info.param.model) +
                                  (info.param.mode == soak::SoakMode::GraphedStep
                                       ? "WholeStep"
                                       : "ForwardBackward");
                         });

}  // namespace
}  // namespace grove::graphs
