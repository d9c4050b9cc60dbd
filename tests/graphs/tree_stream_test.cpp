// Graph-tree scenarios about streams: the manager warms up and records on a stream of its own
// and replays on the caller's, and the caller's work must still be ordered with them
// (Note [The caller's stream and the manager's stream] in graphs/tree/tree_manager.h). On the CPU
// kernels run at once and these pass trivially; on a GPU they fail without the ordering, because
// the caller's kernels are made long enough to still be running when the manager's would start.
#include <gmock/gmock.h>

#include "core/device_graph.h"
#include "tests/sanitizer_scale.h"
#include "tree_test_util.h"

namespace grove::graphs {
namespace {

using TreeStream = testing::TreeTest;
using ops::add;
using ops::add_;
using testing::filled;
using testing::kTestDevice;
using testing::values;
using testing::with_manager;

// Large enough on a GPU that the caller's kernels below take about a millisecond (16 MiB per
// pass, 32 passes); small on the CPU, where they run at once anyway, and under compute-sanitizer,
// where every kernel is slow (Note [GPU tests under compute-sanitizer]).
std::int64_t stream_test_size() {
  if (kTestDevice.is_cpu()) return 1024;
  return grove::testing::sanitizer_scaled(std::int64_t{1} << 22, 1 << 14);
}

// y = 17 x, as 16 kernels: a replay long enough for a read that does not wait to see it unfinished.
WrappedFunction seventeen_times() {
  WrappedFunction function;
  function.name = "seventeen_times";
  function.callable = [](const TensorList& in) {
    Tensor y = in[0];
    for (int i = 0; i < 16; ++i) y = add(y, in[0]);
    return TensorList{y};
  };
  return function;
}

// The input is written by 32 kernels on the caller's stream just before each call, and the
// output is read right after it: a replay that did not wait would see a partial input, and a
// read that did not wait would see a partial output.
TEST_F(TreeStream, CallsAreOrderedWithTheCallersStream) {
  with_manager([](TreeManager& manager) {
    ManagedFunction f = manager.add_function(seventeen_times());
    const std::int64_t n = stream_test_size();
    const Tensor one = filled(n, 1.0f);
    for (int call = 0; call < 5; ++call) {
      Tensor x = filled(n, static_cast<float>(call));
      for (int pass = 0; pass < 32; ++pass) add_(x, one);
      TensorList out = f({x});
      x = Tensor();  // its block may be reused at once by the caller's stream
      Tensor overwrite = filled(n, -1.0f);
      const std::vector<float> got = values(out[0]);
      const float expected = 17.0f * (static_cast<float>(call) + 32.0f);
      std::int64_t wrong = 0;
      for (float value : got) wrong += value != expected ? 1 : 0;
      EXPECT_EQ(wrong, 0) << "call " << call << ": expected every element to be " << expected;
    }
    EXPECT_EQ(manager.counters().replays, 3u);
  });
}

// Outputs of one call feed the next while the caller also writes them on its own stream.
TEST_F(TreeStream, CallerWritesToAnOutputAreSeenByTheNextCall) {
  with_manager([](TreeManager& manager) {
    WrappedFunction first;
    first.name = "first";
    first.callable = [](const TensorList& in) { return TensorList{add(in[0], in[0])}; };
    ManagedFunction f = manager.add_function(first);
    ManagedFunction g = manager.add_function(seventeen_times());
    const std::int64_t n = stream_test_size();
    const Tensor one = filled(n, 1.0f);
    for (int step = 0; step < 4; ++step) {
      mark_step_begin();
      TensorList y = f({filled(n, 1.0f)});                    // 2
      for (int pass = 0; pass < 32; ++pass) add_(y[0], one);  // 34, on the caller's stream
      TensorList z = g({y[0]});
      const std::vector<float> got = values(z[0]);
      std::int64_t wrong = 0;
      for (float value : got) wrong += value != 17.0f * 34.0f ? 1 : 0;
      EXPECT_EQ(wrong, 0) << "step " << step;
    }
  });
}

// Replays run on the caller's stream. Two replays over the same pool memory, queued on two
// streams, would run at once and write each other's intermediates; so a replay on another
// stream than the pool's last work waits for it. The first call's input is made late by a long
// chain on stream A, the second's at once on stream B: unordered, the second replay would
// finish first and the first, finished before the read, overwrite its output. Then a recording
// after replays on streams given back since: it must wait for them, and not through the
// streams' ids, which belong to no one.
TEST_F(TreeStream, AReplayOnAnotherStreamWaitsForThePoolsLastWork) {
  with_manager([](TreeManager& manager) {
    ManagedFunction f = manager.add_function(seventeen_times());
    const std::int64_t n = stream_test_size();
    for (int call = 0; call < 2; ++call) {  // a warm-up, a recording
      mark_step_begin();
      (void)values(f({filled(n, 1.0f)})[0]);
    }
    const Stream a = new_stream(kTestDevice);
    const Stream b = new_stream(kTestDevice);
    for (int round = 0; round < 3; ++round) {
      {
        const StreamGuard on_a(a);
        mark_step_begin();
        Tensor x = filled(n, 0.0f);
        const Tensor one = filled(n, 1.0f);
        for (int pass = 0; pass < 32; ++pass) add_(x, one);
        (void)f({x});  // its output dies; the next step may reuse the memory
      }
      const StreamGuard on_b(b);
      mark_step_begin();
      const TensorList out = f({filled(n, 2.0f)});
      synchronize(a);  // unordered, stream A's replay would now have overwritten the output
      std::int64_t wrong = 0;
      for (float value : values(out[0])) wrong += value != 34.0f ? 1 : 0;
      EXPECT_EQ(wrong, 0) << "round " << round << ": expected every element to be 34";
    }
    synchronize(a);
    synchronize(b);
    release_stream(a);
    release_stream(b);
    EXPECT_EQ(manager.counters().replays, 6u);
    // A new signature: a warm-up and a recording on the manager's stream, after the replays.
    for (int call = 0; call < 2; ++call) {
      mark_step_begin();
      std::int64_t wrong = 0;
      for (float value : values(f({filled(2 * n, 3.0f)})[0])) wrong += value != 51.0f ? 1 : 0;
      EXPECT_EQ(wrong, 0) << "call " << call << " of the second signature";
    }
    EXPECT_EQ(manager.counters().recordings, 2u);
  });
}

// A graphed function called while the caller's stream captures a graph of its own is refused
// with the reason, and the capture can still be ended.
TEST_F(TreeStream, ACallWhileTheCallersStreamCapturesIsRefused) {
  with_manager([](TreeManager& manager) {
    ManagedFunction f = manager.add_function(seventeen_times());
    const Tensor x = filled(8, 1.0f);
    DeviceGraph outer(kTestDevice);
    outer.begin_capture(current_stream(kTestDevice));
    std::string message;
    try {
      (void)f({x});
    } catch (const Error& error) {
      message = error.what();
    }
    outer.end_capture();
    EXPECT_THAT(message, ::testing::HasSubstr("graphed function 'seventeen_times' was called "
                                              "while the caller's stream"));
    EXPECT_THAT(message, ::testing::HasSubstr("Call it outside the capture"));
    EXPECT_EQ(values(f({x})[0]), std::vector<float>(8, 17.0f));  // usable after it
  });
}

}  // namespace
}  // namespace grove::graphs
