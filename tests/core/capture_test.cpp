// Tests of DeviceGraph capture on CPU streams (Note [CPU streams simulate CUDA capture]):
// launched kernels are recorded and not run, replay runs them in order, allocations go to the
// graph's private pool, host reads and synchronisation are refused while capturing, capture
// misuse is reported, pools are shared and released; and StreamGuard / current_stream /
// new_stream.
//
// These tests use the process-wide CPU allocator and default generator (that is what
// DeviceGraph uses), so they compare stats before and after rather than absolute values. CPU
// stream ids are a process-wide resource (kMaxCpuStreams), so the two streams used here are made
// once for the whole binary.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/caching_allocator.h"
#include "core/device_graph.h"
#include "core/rng.h"
#include "core/storage.h"
#include "core/stream.h"
#include "core/tensor.h"

namespace grove {
namespace {

constexpr const char* kCaptureMessage = "operation not permitted when stream is capturing";

Stream capture_stream() {
  static const Stream stream = new_stream(kCPU);
  return stream;
}
Stream other_stream() {
  static const Stream stream = new_stream(kCPU);
  return stream;
}

::testing::AssertionResult has_substr(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << part << "\" not found in: " << text;
}

// The message of the grove::Error that `body` throws, or "" if it throws none.
template <typename Body>
std::string error_of(Body&& body) {
  try {
    body();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

// True if `ptr` lies in one of the pool's segments.
bool inside_pool(PoolId pool, const void* ptr) {
  const auto address = reinterpret_cast<std::uintptr_t>(ptr);
  for (const SegmentInfo& segment : allocator_for(kCPU).snapshot(pool)) {
    if (address >= segment.address && address < segment.address + segment.size) return true;
  }
  return false;
}

// Runs `operation`, expecting a grove::Error that says a capture forbids it.
template <typename Operation>
::testing::AssertionResult refused_while_capturing(Operation operation) {
  try {
    operation();
  } catch (const Error& error) {
    return has_substr(error.what(), kCaptureMessage);
  }
  return ::testing::AssertionFailure() << "no grove::Error was thrown";
}

// A fixture whose graph captures on capture_stream() (made current) from begin() until the
// test ends, so that a failing test never leaves a capture running for the next one.
class CaptureTest : public ::testing::Test {
 protected:
  void begin() {
    guard_ = std::make_unique<StreamGuard>(capture_stream());
    graph.begin_capture(capture_stream());
  }
  void end() {
    graph.end_capture();
    guard_.reset();
  }
  void TearDown() override {
    if (graph.is_capturing()) graph.end_capture();
    guard_.reset();
  }

  DeviceGraph graph{kCPU};

 private:
  std::unique_ptr<StreamGuard> guard_;
};

// --- recording and replay ---

TEST_F(CaptureTest, KernelsLaunchedDuringCaptureAreRecordedNotRun) {
  Tensor x = full({4}, 1.0f);
  Tensor y = zeros({4});
  std::int32_t raw = 5;
  begin();
  x.fill_(9.0f);
  y.copy_(x);
  Tensor z = x.clone();
  std::int32_t* raw_pointer = &raw;
  launch_cpu(capture_stream(), [raw_pointer] { *raw_pointer = 42; });
  end();
  EXPECT_EQ(graph.num_nodes(), 4u);  // fill, copy, clone's copy, the raw kernel
  EXPECT_TRUE(graph.has_work());
  EXPECT_EQ(x.to_vector<float>(), std::vector<float>(4, 1.0f));
  EXPECT_EQ(y.to_vector<float>(), std::vector<float>(4, 0.0f));
  EXPECT_EQ(raw, 5);
}

TEST_F(CaptureTest, ReplayRunsTheRecordedKernelsInOrder) {
  Tensor x = zeros({3});
  Tensor y = zeros({3});
  int log[8] = {};
  int count = 0;
  begin();
  int* log_pointer = log;
  int* count_pointer = &count;
  x.fill_(3.0f);
  y.copy_(x);  // must see 3, not the 7 written after it
  x.fill_(7.0f);
  for (int i = 0; i < 3; ++i) {
    launch_cpu(capture_stream(), [=] { log_pointer[(*count_pointer)++] = i; });
  }
  end();
  graph.replay();
  EXPECT_EQ(y.to_vector<float>(), std::vector<float>(3, 3.0f));
  EXPECT_EQ(x.to_vector<float>(), std::vector<float>(3, 7.0f));
  graph.replay();
  ASSERT_EQ(count, 6);
  EXPECT_EQ(std::vector<int>(log, log + 6), (std::vector<int>{0, 1, 2, 0, 1, 2}));
}

// out = double(broadcast(in) * 2 + 1) computed by a mix of tensor kernels and a raw kernel.
Tensor small_program(const Tensor& in) {
  Tensor scaled = in.clone();  // a graph intermediate
  float* data = scaled.data<float>();
  const std::int64_t n = scaled.numel();
  launch_cpu(current_stream(kCPU), [data, n] {
    for (std::int64_t i = 0; i < n; ++i) data[i] = data[i] * 2.0f + 1.0f;
  });
  Tensor out = empty({2, n}, DType::Float64);
  out.copy_(scaled);  // broadcast over the first dim, float -> double
  return out;
}

TEST_F(CaptureTest, ReplayWithNewInputsReproducesTheEagerResult) {
  Tensor input = from_vector<float>({1.0f, 2.0f, 3.0f});
  begin();
  Tensor output = small_program(input);
  end();
  for (float base : {10.0f, -4.5f}) {
    const std::vector<float> values = {base, base + 1.0f, base * 3.0f};
    std::copy(values.begin(), values.end(), input.data<float>());  // write into the graph input
    graph.replay();
    const Tensor eager = small_program(from_vector(values));
    EXPECT_EQ(output.to_vector<double>(), eager.to_vector<double>()) << "base " << base;
  }
}

TEST_F(CaptureTest, AllocationsOnTheCaptureStreamGoToTheGraphsPool) {
  CachingAllocator& cpu = allocator_for(kCPU);
  const std::size_t private_before = cpu.stats().private_pool_bytes;
  begin();
  Tensor inside = empty({256});
  ASSERT_TRUE(graph.pool().is_private());
  EXPECT_TRUE(inside_pool(graph.pool(), inside.data_ptr()));
  EXPECT_FALSE(cpu.snapshot(graph.pool()).empty());
  EXPECT_GT(cpu.stats().private_pool_bytes, private_before);
  end();
  // After the capture the same stream allocates from the default pool again.
  Tensor outside = empty({256});
  EXPECT_FALSE(inside_pool(graph.pool(), outside.data_ptr()));
}

TEST_F(CaptureTest, OtherStreamsAreNeitherCapturedNorRouted) {
  std::int32_t ran = 0;
  begin();
  std::int32_t* ran_pointer = &ran;
  launch_cpu(other_stream(), [ran_pointer] { *ran_pointer = 1; });
  StoragePtr storage = Storage::allocate(1000, kCPU, other_stream());
  EXPECT_FALSE(is_capturing(other_stream()));
  EXPECT_TRUE(is_capturing(capture_stream()));
  end();
  EXPECT_EQ(ran, 1);  // ran at once
  EXPECT_EQ(graph.num_nodes(), 0u);
  EXPECT_FALSE(inside_pool(graph.pool(), storage->data()));
}

// --- host reads and synchronisation are refused ---

TEST_F(CaptureTest, ItemThrowsWhileCapturing) {
  Tensor x = full({1}, 2.0f);
  begin();
  EXPECT_TRUE(refused_while_capturing([&] { (void)x.item<float>(); }));
}

TEST_F(CaptureTest, ToVectorThrowsWhileCapturing) {
  Tensor x = full({3}, 2.0f);
  begin();
  EXPECT_TRUE(refused_while_capturing([&] { (void)x.to_vector<float>(); }));
}

TEST_F(CaptureTest, PrintingATensorThrowsWhileCapturing) {
  Tensor x = full({3}, 2.0f);
  begin();
  std::ostringstream out;
  EXPECT_TRUE(refused_while_capturing([&] { out << x; }));
}

TEST_F(CaptureTest, FromVectorThrowsWhileCapturing) {
  begin();
  EXPECT_TRUE(refused_while_capturing([] { (void)from_vector<float>({1.0f, 2.0f}); }));
}

TEST_F(CaptureTest, SynchronizeThrowsWhileCapturing) {
  begin();
  EXPECT_TRUE(refused_while_capturing([] { synchronize(capture_stream()); }));
}

TEST_F(CaptureTest, HostReadsThrowWhileCapturingEvenUnderAnotherStream) {
  // CUDA's thread-local capture mode refuses them on any stream of the capturing thread.
  Tensor x = full({1}, 2.0f);
  begin();
  StreamGuard elsewhere(other_stream());
  EXPECT_TRUE(refused_while_capturing([&] { (void)x.item<float>(); }));
}

TEST_F(CaptureTest, HostReadsWorkAgainAfterTheCapture) {
  Tensor x = full({1}, 2.0f);
  begin();
  end();
  EXPECT_EQ(x.item<float>(), 2.0f);
  EXPECT_NO_THROW(synchronize(capture_stream()));
}

// --- misuse ---

TEST_F(CaptureTest, BeginningTwiceThrows) {
  begin();
  EXPECT_THROW(graph.begin_capture(capture_stream()), Error);
  EXPECT_THROW(graph.begin_capture(other_stream()), Error);
  EXPECT_TRUE(graph.is_capturing());
}

TEST_F(CaptureTest, EndingWithoutBeginningThrows) {
  EXPECT_THROW(graph.end_capture(), Error);
  begin();
  end();
  EXPECT_THROW(graph.end_capture(), Error);
}

TEST_F(CaptureTest, ReplayBeforeCaptureThrows) {
  EXPECT_THROW(graph.replay(), Error);
  begin();
  EXPECT_THROW(graph.replay(), Error);  // still capturing
}

TEST_F(CaptureTest, CapturingAgainWithoutResetThrows) {
  begin();
  end();
  EXPECT_THROW(graph.begin_capture(capture_stream()), Error);
  graph.reset();
  EXPECT_FALSE(graph.has_work());
  EXPECT_EQ(graph.num_nodes(), 0u);
  EXPECT_THROW(graph.replay(), Error);
  begin();  // a reset graph captures again
  end();
  EXPECT_TRUE(graph.has_work());
}

TEST_F(CaptureTest, EndingFromAnotherThreadThrowsAndLeavesTheCaptureOpen) {
  begin();
  bool threw = false;
  std::thread([&] {
    try {
      graph.end_capture();
    } catch (const Error&) {
      threw = true;
    }
  }).join();
  EXPECT_TRUE(threw);
  EXPECT_TRUE(graph.is_capturing());
  EXPECT_TRUE(is_capturing(capture_stream()));
  EXPECT_NO_THROW(end());  // the thread that began it can still end it
  EXPECT_FALSE(is_capturing(capture_stream()));
}

TEST_F(CaptureTest, CapturingOnAStreamThatIsAlreadyCapturingThrows) {
  begin();
  const PoolId first_pool = graph.pool();
  DeviceGraph second(kCPU);
  EXPECT_THROW(second.begin_capture(capture_stream()), Error);
  EXPECT_FALSE(second.is_capturing());
  EXPECT_FALSE(second.pool().is_private());
  // The first capture is undisturbed.
  Tensor t = empty({16});
  EXPECT_TRUE(inside_pool(first_pool, t.data_ptr()));
  EXPECT_TRUE(is_capturing(capture_stream()));
}

TEST_F(CaptureTest, AFailedBeginCaptureLeavesNothingBehind) {
  // Stream 100 is not a CPU stream: the capture backend refuses it after the pool route and the
  // generator's capture were set up; both must be undone.
  const Stream bogus{kCPU, 100};
  EXPECT_THROW(graph.begin_capture(bogus), Error);
  EXPECT_FALSE(graph.is_capturing());
  EXPECT_FALSE(graph.pool().is_private());  // the pool made for it was released
  // The default generator is not left in capture mode...
  const PhiloxArgs args = default_generator(kCPU).reserve(1);
  EXPECT_EQ(args.cell, nullptr);
  // ... so the next capture can start, and the bogus stream is not routed to any pool.
  begin();
  end();
  CachingAllocator& cpu = allocator_for(kCPU);
  DataPtr block = cpu.allocate(1000, bogus);
  for (const SegmentInfo& segment : cpu.snapshot()) {
    const auto address = reinterpret_cast<std::uintptr_t>(block.get());
    if (address >= segment.address && address < segment.address + segment.size) {
      EXPECT_FALSE(segment.pool.is_private());
    }
  }
}

// --- pools ---

TEST(CapturePoolTest, TwoGraphsShareAPoolUntilBothAreReset) {
  CachingAllocator& cpu = allocator_for(kCPU);
  StreamGuard guard(capture_stream());
  DeviceGraph first(kCPU);
  DeviceGraph second(kCPU);
  first.begin_capture(capture_stream());
  Tensor a = full({64}, 1.0f);
  first.end_capture();
  const PoolId pool = first.pool();
  second.begin_capture(capture_stream(), pool);
  Tensor b = full({64}, 2.0f);
  second.end_capture();
  EXPECT_TRUE(second.pool() == pool);
  EXPECT_TRUE(inside_pool(pool, a.data_ptr()));
  EXPECT_TRUE(inside_pool(pool, b.data_ptr()));

  a = Tensor();
  b = Tensor();
  first.reset();
  EXPECT_TRUE(cpu.pool_exists(pool));  // the second graph still holds a use
  second.reset();
  EXPECT_FALSE(cpu.pool_exists(pool));
}

TEST(CapturePoolTest, TheGraphsPoolIsReleasedOnDestructionOnceItsBlocksAreFree) {
  CachingAllocator& cpu = allocator_for(kCPU);
  const std::size_t private_before = cpu.stats().private_pool_bytes;
  StreamGuard guard(capture_stream());
  Tensor output;
  PoolId pool;
  {
    DeviceGraph graph(kCPU);
    graph.begin_capture(capture_stream());
    output = full({1000}, 1.0f);
    graph.end_capture();
    pool = graph.pool();
  }
  EXPECT_TRUE(cpu.pool_exists(pool));  // the output still lives in it
  output = Tensor();
  EXPECT_FALSE(cpu.pool_exists(pool));
  EXPECT_EQ(cpu.stats().private_pool_bytes, private_before);
}

// --- streams ---

TEST(CaptureStreamTest, NewStreamGivesDistinctNonDefaultStreams) {
  const Stream made = new_stream(kCPU);
  EXPECT_TRUE(made.device == kCPU);
  EXPECT_NE(made.id, 0u);
  EXPECT_FALSE(made == capture_stream());
  EXPECT_FALSE(made == other_stream());
  EXPECT_FALSE(capture_stream() == other_stream());
  EXPECT_EQ(default_stream(kCPU).id, 0u);
}

TEST(CaptureStreamTest, ReleasedStreamsAreHandedOutAgain) {
  const std::size_t in_use = streams_in_use(kCPU);
  const Stream first = new_stream(kCPU);
  EXPECT_EQ(streams_in_use(kCPU), in_use + 1);
  release_stream(first);
  EXPECT_EQ(streams_in_use(kCPU), in_use);
  // Far more streams than there are ids, one at a time.
  for (std::uint32_t i = 0; i < 4 * kMaxCpuStreams; ++i) release_stream(new_stream(kCPU));
  EXPECT_EQ(streams_in_use(kCPU), in_use);
  const Stream again = new_stream(kCPU);
  EXPECT_EQ(again.id, first.id);  // the id given back last is handed out first
  release_stream(again);
}

TEST(CaptureStreamTest, ReleaseStreamRefusesWhatItCannotTakeBack) {
  EXPECT_TRUE(has_substr(error_of([] { release_stream(default_stream(kCPU)); }),
                         "is the device's default stream"));
  const Stream stream = new_stream(kCPU);
  release_stream(stream);
  EXPECT_TRUE(has_substr(error_of([&] { release_stream(stream); }), "is not handed out"));
  const Stream capturing = new_stream(kCPU);
  DeviceGraph graph(kCPU);
  graph.begin_capture(capturing);
  EXPECT_TRUE(has_substr(error_of([&] { release_stream(capturing); }), "is capturing a graph"));
  graph.end_capture();
  release_stream(capturing);
}

TEST(CaptureStreamTest, StreamGuardSetsAndRestoresTheCurrentStream) {
  EXPECT_TRUE(current_stream(kCPU) == default_stream(kCPU));
  {
    StreamGuard outer(capture_stream());
    EXPECT_TRUE(current_stream(kCPU) == capture_stream());
    {
      StreamGuard inner(other_stream());
      EXPECT_TRUE(current_stream(kCPU) == other_stream());
    }
    EXPECT_TRUE(current_stream(kCPU) == capture_stream());
  }
  EXPECT_TRUE(current_stream(kCPU) == default_stream(kCPU));
}

TEST(CaptureStreamTest, TheCurrentStreamIsPerThread) {
  StreamGuard guard(capture_stream());
  Stream seen_by_other_thread{kCPU, 12345};
  std::thread([&] { seen_by_other_thread = current_stream(kCPU); }).join();
  EXPECT_TRUE(seen_by_other_thread == default_stream(kCPU));
  EXPECT_TRUE(current_stream(kCPU) == capture_stream());
}

TEST(CaptureStreamTest, StreamGuardRejectsAnIdThatIsNotACpuStream) {
  EXPECT_THROW(StreamGuard guard(Stream{kCPU, kMaxCpuStreams}), Error);
  EXPECT_TRUE(current_stream(kCPU) == default_stream(kCPU));
}

TEST(CaptureStreamTest, TensorKernelsRunOnTheCurrentStream) {
  // A capture records only work launched on its stream: under a guard for another stream the
  // same fill runs at once.
  DeviceGraph graph(kCPU);
  Tensor x = zeros({2});
  {
    StreamGuard guard(capture_stream());
    graph.begin_capture(capture_stream());
    {
      StreamGuard elsewhere(other_stream());
      x.fill_(4.0f);
    }
    x.fill_(8.0f);  // recorded
    graph.end_capture();
  }
  EXPECT_EQ(graph.num_nodes(), 1u);
  EXPECT_EQ(x.to_vector<float>(), std::vector<float>(2, 4.0f));
  graph.replay();
  EXPECT_EQ(x.to_vector<float>(), std::vector<float>(2, 8.0f));
}

}  // namespace
}  // namespace grove
