// Graph-tree scenarios about running out of memory (Note [Out of memory in graphed mode] in
// graphs/tree/tree_manager.h): with a reserved-bytes limit (CachingAllocator::set_memory_limit), an
// allocation that fails during a warm-up, a recording, or a recording that follows replays
// throws OutOfMemoryError naming the call and the pool's memory; the manager is left as before
// the call, works again once the limit is lifted, and nothing leaks. Replays allocate nothing,
// so they run at the limit.
//
// The tensors are big (kBig floats, 12 MiB) so that each gets a segment of its own
// (CachingAllocator::kMinLargeAlloc) and the pool's needs are exact: a limit equal to the
// reserved bytes, after empty_cache(), refuses any new segment.
#include <gmock/gmock.h>

#include <algorithm>

#include "autograd/grad_mode.h"
#include "compile_test_util.h"
#include "core/caching_allocator.h"
#include "core/format.h"
#include "ops/reduce.h"
#include "tree_test_util.h"

namespace grove::graphs {
namespace {

using TreeOom = testing::TreeTest;
using testing::filled;
using ::testing::HasSubstr;
using testing::with_manager;

constexpr std::int64_t kBig = 3 << 20;  // floats: 12 MiB, a segment of its own

CachingAllocator& device_allocator() {
  return allocator_for(testing::kTestDevice);
}

// Caps reserved bytes at what is reserved now, with nothing cached outside private pools, so
// that any new segment is refused (and the retry after freeing the cache has nothing to free).
// Lifts the cap when it goes away, even if the test fails.
class LimitAtReserved {
 public:
  LimitAtReserved() {
    device_allocator().empty_cache();
    device_allocator().set_memory_limit(device_allocator().stats().reserved_bytes);
  }
  ~LimitAtReserved() { lift(); }
  LimitAtReserved(const LimitAtReserved&) = delete;
  LimitAtReserved& operator=(const LimitAtReserved&) = delete;
  void lift() { device_allocator().set_memory_limit(0); }
};

// What the pool holds, as the messages print it.
struct PoolMemory {
  std::size_t segments = 0;
  std::size_t reserved = 0;
  std::size_t allocated = 0;
};
PoolMemory pool_memory(PoolId pool) {
  PoolMemory memory;
  for (const SegmentInfo& segment : device_allocator().snapshot(pool)) {
    ++memory.segments;
    memory.reserved += segment.size;
    for (const BlockInfo& block : segment.blocks)
      memory.allocated += block.allocated ? block.size : 0;
  }
  return memory;
}

// The OutOfMemoryError `body` throws (a failure if it throws nothing or something else).
std::string out_of_memory_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const OutOfMemoryError& error) {
    return error.what();
  } catch (const std::exception& error) {
    ADD_FAILURE() << "expected OutOfMemoryError, got: " << error.what();
    return "";
  }
  ADD_FAILURE() << "expected OutOfMemoryError, nothing was thrown";
  return "";
}

bool all_equal(const Tensor& tensor, float value) {
  const std::vector<float> got = testing::values(tensor);
  return std::all_of(got.begin(), got.end(), [&](float x) { return x == value; });
}

// y = 2x + 1: a temporary and the output, each kBig floats.
WrappedFunction affine() {
  WrappedFunction function;
  function.name = "affine";
  function.callable = [](const TensorList& in) {
    const Tensor twice = ops::mul(in[0], 2.0f);
    return TensorList{ops::add(twice, 1.0f)};
  };
  return function;
}

// z = 3y + (3y + 1), three tensors of kBig floats alive at its end.
WrappedFunction three_temporaries() {
  WrappedFunction function;
  function.name = "three temporaries";
  function.callable = [](const TensorList& in) {
    const Tensor a = ops::mul(in[0], 3.0f);
    const Tensor b = ops::add(a, 1.0f);
    return TensorList{ops::add(a, b)};
  };
  return function;
}

// The checks every scenario ends with: the allocator's view of the pool is the live outputs
// (debug checks), the stream is not left capturing, and, once the manager is gone, its pool is
// released and every byte is back.
void expect_given_back(const AllocatorStats& before, std::size_t pools_before) {
  const AllocatorStats after = device_allocator().stats();
  EXPECT_EQ(device_allocator().num_pools(), pools_before);
  EXPECT_EQ(after.allocated_bytes, before.allocated_bytes);
  EXPECT_EQ(after.private_pool_bytes, before.private_pool_bytes);
}

TEST_F(TreeOom, OutOfMemoryInAWarmUpNamesThePoolAndTheNextCallWarmsUp) {
  const AllocatorStats before = device_allocator().stats();
  const std::size_t pools_before = device_allocator().num_pools();
  with_manager([](TreeManager& manager) {
    ManagedFunction f = manager.add_function(affine());
    const Tensor x = filled(kBig, 1.0f);
    std::string message;
    {
      LimitAtReserved limit;
      message = out_of_memory_of([&] { f({x}); });
    }
    EXPECT_THAT(message, HasSubstr("out of memory on " + testing::kTestDevice.to_string()));
    EXPECT_THAT(message, HasSubstr("into private pool"));
    EXPECT_THAT(message, HasSubstr("while warming up graphed function 'affine'"));
    EXPECT_THAT(message, HasSubstr("reserved limit"));
    EXPECT_THAT(message, HasSubstr("call again once memory is free"));
    // Nothing happened: no node, no state, no block of the pool in use, the stream free.
    EXPECT_EQ(manager.state(), PathState::None);
    EXPECT_EQ(manager.counters().warmups, 0u);
    EXPECT_FALSE(manager.current_node_id().has_value());
    EXPECT_EQ(pool_memory(manager.pool()).allocated, 0u);
    EXPECT_FALSE(is_capturing(manager.stream()));

    // Memory is back: warm-up, recording and replay as if the failed call never happened.
    for (int call = 0; call < 3; ++call) {
      EXPECT_TRUE(all_equal(f({x})[0], 3.0f)) << "call " << call;
    }
    EXPECT_EQ(manager.counters().warmups, 1u);
    EXPECT_EQ(manager.counters().recordings, 1u);
    EXPECT_EQ(manager.counters().replays, 1u);
    EXPECT_EQ(manager.counters().eager_fallbacks, 0u);
  });
  expect_given_back(before, pools_before);
}

TEST_F(TreeOom, OutOfMemoryInARecordingIsNotACaptureFailureAndTheNextCallRecords) {
  const AllocatorStats before = device_allocator().stats();
  const std::size_t pools_before = device_allocator().num_pools();
  with_manager([](TreeManager& manager) {
    ManagedFunction f = manager.add_function(affine());
    const Tensor x = filled(kBig, 1.0f);
    EXPECT_TRUE(all_equal(f({x})[0], 3.0f));  // warm-up: the pool holds two big segments
    const PoolMemory warm = pool_memory(manager.pool());
    EXPECT_EQ(warm.allocated, 0u);
    // The recording needs three (an input buffer, the temporary, the output).
    std::string message;
    {
      LimitAtReserved limit;
      message = out_of_memory_of([&] { f({x}); });
    }
    EXPECT_THAT(message, HasSubstr("while recording graphed function 'affine'"));
    // The pool's memory, as it was when the allocation failed (the capture's blocks are free
    // again, its segments stay in the pool).
    const PoolMemory after_failure = pool_memory(manager.pool());
    EXPECT_EQ(after_failure.reserved, warm.reserved);
    EXPECT_EQ(after_failure.allocated, 0u);
    EXPECT_THAT(message,
                HasSubstr(str("private pool ", manager.pool().id, " (graph memory: ", warm.segments,
                              " segments, ", format_bytes(warm.reserved), " reserved")));
    EXPECT_THAT(message, HasSubstr(str(manager.pool(), ": ", warm.segments, " segments")));
    EXPECT_FALSE(is_capturing(manager.stream()));
    EXPECT_EQ(manager.num_graph_nodes(), 0u);
    EXPECT_EQ(manager.counters().recordings, 0u);
    EXPECT_EQ(manager.counters().eager_fallbacks, 0u);

    // Not remembered as a capture failure: the next call records, the one after replays.
    EXPECT_TRUE(all_equal(f({x})[0], 3.0f));
    EXPECT_TRUE(all_equal(f({x})[0], 3.0f));
    EXPECT_EQ(manager.counters().recordings, 1u);
    EXPECT_EQ(manager.counters().replays, 1u);
    EXPECT_EQ(manager.counters().eager_fallbacks, 0u);
  });
  expect_given_back(before, pools_before);
}

TEST_F(TreeOom, ACaptureThatRunsOutKeepsTheCacheAndReportsOutOfMemory) {
  with_manager([](TreeManager& manager) {
    ManagedFunction f = manager.add_function(affine());
    const Tensor x = filled(kBig, 1.0f);
    f({x});  // warm-up
    device_allocator().empty_cache();
    ops::mul(x, 1.0f);  // dies at once: a cached 12 MiB segment outside the pool
    const std::size_t reserved = device_allocator().stats().reserved_bytes;
    device_allocator().set_memory_limit(reserved);
    // Freeing the cached segment would make room, but not while the graph captures (on CUDA
    // the cudaFree would end the capture with an error that hides the out of memory).
    const std::string message = out_of_memory_of([&] { f({x}); });
    device_allocator().set_memory_limit(0);
    EXPECT_THAT(message, HasSubstr("during a graph capture"));
    EXPECT_THAT(message, HasSubstr("while recording graphed function 'affine'"));
    EXPECT_EQ(device_allocator().stats().reserved_bytes, reserved);  // the cache is still there
    EXPECT_FALSE(is_capturing(manager.stream()));
    EXPECT_TRUE(all_equal(f({x})[0], 3.0f));  // records now
    EXPECT_EQ(manager.counters().recordings, 1u);
  });
}

TEST_F(TreeOom, ReplaysAllocateNothingSoTheyRunAtTheLimit) {
  with_manager([](TreeManager& manager) {
    ManagedFunction f = manager.add_function(affine());
    const Tensor x = filled(kBig, 1.0f);
    const Tensor x2 = filled(kBig, 2.0f);
    f({x});
    f({x});  // warm-up, recording
    LimitAtReserved limit;
    const AllocatorStats at_limit = device_allocator().stats();
    for (int step = 0; step < 3; ++step) {
      EXPECT_TRUE(all_equal(f({x2})[0], 5.0f));
      EXPECT_TRUE(all_equal(f({x})[0], 3.0f));
    }
    const AllocatorStats after = device_allocator().stats();
    EXPECT_EQ(manager.counters().replays, 6u);
    EXPECT_EQ(after.num_ooms, at_limit.num_ooms);
    EXPECT_EQ(after.reserved_bytes, at_limit.reserved_bytes);
    EXPECT_EQ(after.num_segment_allocations, at_limit.num_segment_allocations);
    EXPECT_EQ(after.num_allocations, at_limit.num_allocations);  // not even from the cache
    EXPECT_EQ(after.allocated_bytes, at_limit.allocated_bytes);
  });
}

TEST_F(TreeOom, OutOfMemoryAfterReplaysKeepsThePathAndItsOutputs) {
  const AllocatorStats before = device_allocator().stats();
  const std::size_t pools_before = device_allocator().num_pools();
  with_manager([](TreeManager& manager) {
    ManagedFunction f = manager.add_function(affine());
    ManagedFunction g = manager.add_function(three_temporaries());
    const Tensor x = filled(kBig, 1.0f);
    f({x});
    f({x});
    mark_step_begin();
    TensorList y = f({x});  // a replay; y stays alive
    ASSERT_EQ(manager.state(), PathState::Execution);
    const std::int64_t replayed_node = *manager.current_node_id();
    std::string message;
    {
      // g, called on y in the same step, warms up after the replay: it needs three big
      // segments, the pool has two free ones (the input buffer's and the temporary's).
      LimitAtReserved limit;
      message = out_of_memory_of([&] { g({y[0]}); });
    }
    EXPECT_THAT(message, HasSubstr("while warming up graphed function 'three temporaries'"));
    // The path is as it was: the replayed node, its output alive and intact.
    EXPECT_EQ(manager.state(), PathState::Execution);
    EXPECT_EQ(manager.current_node_id(), replayed_node);
    EXPECT_TRUE(all_equal(y[0], 3.0f));
    EXPECT_EQ(manager.counters().warmups, 1u);
    EXPECT_FALSE(is_capturing(manager.stream()));

    // The next step replays f; then g warms up, records and replays as a child.
    for (int step = 0; step < 3; ++step) {
      mark_step_begin();
      y = f({x});
      EXPECT_TRUE(all_equal(g({y[0]})[0], 19.0f)) << "step " << step;  // 3*3 + 3*3 + 1
      EXPECT_TRUE(all_equal(y[0], 3.0f));
    }
    EXPECT_EQ(manager.counters().recordings, 2u);  // f, then g under it
    EXPECT_EQ(manager.counters().eager_fallbacks, 0u);
    EXPECT_EQ(manager.num_graph_nodes(), 2u);
  });
  expect_given_back(before, pools_before);
}

// The real path: a compiled function with a backward (forward and backward graphs). Its
// recording runs out; the next call records, the gradients are right, and nothing ran eagerly.
TEST_F(TreeOom, CompiledForwardAndBackwardRecordAfterRunningOut) {
  const AllocatorStats before = device_allocator().stats();
  const std::size_t pools_before = device_allocator().num_pools();
  testing::on_fresh_thread([] {
    const Tensor w = filled(kBig, 0.5f).requires_grad_();
    CompileOptions options = testing::quiet();
    options.name = "weighted sum";
    const CompiledFunction loss_of =
        compile([&w](const Tensor& x) { return ops::sum(ops::mul(x, w)); }, options);
    const Tensor x = filled(kBig, 2.0f);
    auto step = [&] {
      w.set_grad({});
      const Tensor loss = loss_of(x);
      loss.backward();
      // sum(x * w) = kBig; d/dw = x.
      EXPECT_EQ(loss.item<float>(), static_cast<float>(kBig));
      EXPECT_TRUE(all_equal(w.grad(), 2.0f));
    };
    step();  // trace, warm-ups of the forward and the backward
    w.set_grad({});
    std::string message;
    {
      LimitAtReserved limit;
      message = out_of_memory_of([&] { loss_of(x); });
    }
    EXPECT_THAT(message, HasSubstr("while recording graphed function 'weighted sum forward'"));
    const TreeManager& manager = tree_manager(testing::kTestDevice);
    EXPECT_FALSE(is_capturing(manager.stream()));
    EXPECT_EQ(manager.counters().recordings, 0u);
    for (int call = 0; call < 3; ++call) step();  // record forward and backward, then replay
    EXPECT_EQ(manager.counters().recordings, 2u);
    EXPECT_EQ(manager.counters().replays, 4u);
    EXPECT_EQ(manager.counters().eager_fallbacks, 0u);
    EXPECT_EQ(loss_of.stats().eager_calls, 0u);
  });
  expect_given_back(before, pools_before);
}

}  // namespace
}  // namespace grove::graphs
