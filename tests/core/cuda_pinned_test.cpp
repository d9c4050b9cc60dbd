// Tests of pinned host memory (Tensor::pin_memory, core/cuda/pinned_memory.cpp): round trips,
// asynchronous copies from and to pinned memory, and the rule that a freed pinned block is not
// handed out again while a copy that reads it may still be queued
// (Note [Reuse of pinned host blocks]). The GPU tests skip without a device; the last test checks
// what a machine without one says.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/storage.h"
#include "core/stream.h"
#include "core/tensor.h"
#include "tests/core/cuda_test_util.h"
#include "tests/sanitizer_scale.h"

namespace grove {
namespace {

using testing::error_of;
using testing::kGpu;

// Values that differ at every index (exact in float32 up to 2^24).
std::vector<float> ramp(std::int64_t n, float start) {
  std::vector<float> values(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = start + static_cast<float>(i % 1000003);
  return values;
}

// Queues a few milliseconds of device work on the current stream, so that a copy queued after
// it is still waiting when the host goes on (an H200 copies 256 MiB in roughly 0.2 ms). The
// tensors die on return: their blocks go back to the cache, reusable by later work on the
// stream (the allocator test of cuda_test.cpp expects nothing to stay allocated).
// 40 copies of 256 MiB (4 MiB under compute-sanitizer: Note [GPU tests under compute-sanitizer]).
void queue_slow_work() {
  const std::int64_t n = grove::testing::sanitizer_scaled(std::int64_t{1} << 26, 1 << 20);
  const Tensor a = zeros({n}, kGpu);
  const Tensor b = zeros({n}, kGpu);
  for (int i = 0; i < 40; ++i) a.copy_(b);
}

const void* data_of(const Tensor& tensor) {
  return tensor.storage()->unchecked_data();
}

TEST(CudaPinnedTest, PinMemoryRoundTrip) {
  SKIP_WITHOUT_GPU();
  const Tensor source = from_vector<float>(ramp(1000, -3.0f), {10, 100});
  const Tensor pinned = source.pin_memory();
  EXPECT_TRUE(pinned.is_pinned());
  EXPECT_TRUE(pinned.device().is_cpu());
  EXPECT_FALSE(pinned.is_alias_of(source));
  EXPECT_EQ(pinned.sizes(), source.sizes());
  EXPECT_EQ(pinned.to_vector<float>(), source.to_vector<float>());
  // Pinning a pinned tensor gives it back; its views are pinned too.
  EXPECT_TRUE(pinned.pin_memory().is_alias_of(pinned));
  EXPECT_TRUE(pinned.slice(1, 3, 50).is_pinned());
  // A non-contiguous source gives a dense pinned copy.
  const Tensor transposed = source.t().pin_memory();
  EXPECT_TRUE(transposed.is_pinned());
  EXPECT_TRUE(transposed.is_contiguous());
  EXPECT_EQ(transposed.to_vector<float>(), source.t().contiguous().to_vector<float>());

  // host -> device -> pinned host, both non-blocking, then synchronise before reading.
  const Tensor on_device = pinned.to(kGpu, /*non_blocking=*/true);
  const Tensor back = zeros({10, 100}).pin_memory();
  back.copy_(on_device, /*non_blocking=*/true);
  synchronize(current_stream(kGpu));
  EXPECT_EQ(back.to_vector<float>(), source.to_vector<float>());
  // A blocking copy from pinned memory is done when it returns.
  EXPECT_EQ(pinned.to(kGpu).to(kCPU).to_vector<float>(), source.to_vector<float>());
  // Empty and 0-d tensors pin too.
  EXPECT_TRUE(zeros({0, 3}).pin_memory().is_pinned());
  EXPECT_EQ(full({}, 2.5).pin_memory().to(kGpu, true).to(kCPU).to_vector<float>(),
            std::vector<float>{2.5f});
}

TEST(CudaPinnedTest, AsyncCopyFromPinnedThenComputeThenBackEqualsTheSource) {
  SKIP_WITHOUT_GPU();
  const std::int64_t n = (std::int64_t{1} << 22) + 5;
  const std::vector<float> values = ramp(n, 0.5f);
  const Tensor pinned = from_vector<float>(values).pin_memory();
  queue_slow_work();
  const Tensor on_device = pinned.to(kGpu, /*non_blocking=*/true);
  const Tensor widened = on_device.to(DType::Float64);  // a kernel that reads the copy
  const std::vector<double> back = widened.to(kCPU).to_vector<double>();
  ASSERT_EQ(back.size(), values.size());
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < values.size(); ++i) mismatches += back[i] != values[i];
  EXPECT_EQ(mismatches, 0u);
}

TEST(CudaPinnedTest, AFreedBlockIsNotReusedWhileACopyReadsIt) {
  SKIP_WITHOUT_GPU();
  const std::int64_t n = std::int64_t{3} << 20;  // 12 MiB: its own size class in this binary
  Tensor source = full({n}, 1.0f).pin_memory();
  const void* source_block = data_of(source);
  queue_slow_work();
  const Tensor on_device = source.to(kGpu, /*non_blocking=*/true);  // queued behind the work
  source = Tensor();  // frees the pinned block while the copy may still be waiting to read it
  const Tensor other = full({n}, 0.0f).pin_memory();
  other.fill_(7.0f);  // would show up on the device if `other` had taken the source's block
  const bool reused_at_once = data_of(other) == source_block;
  synchronize(current_stream(kGpu));
  const std::vector<float> landed = on_device.to(kCPU).to_vector<float>();
  std::size_t wrong = 0;
  for (float v : landed) wrong += v != 1.0f;
  EXPECT_EQ(wrong, 0u) << "the copy read a reused block (reused at once: " << reused_at_once << ")";
  // Once the copies are done the cache hands the freed block out again.
  const Tensor again = full({n}, 0.0f).pin_memory();
  EXPECT_EQ(data_of(again), source_block);
}

TEST(CudaPinnedTest, OrdinaryTensorsAreNotPinned) {
  // Runs with or without a GPU: asking never needs a device.
  EXPECT_FALSE(zeros({4, 4}).is_pinned());
  EXPECT_FALSE(zeros({4, 4}).t().is_pinned());
  EXPECT_FALSE(zeros({0}).is_pinned());
  if (cuda_is_available()) {
    EXPECT_FALSE(zeros({4}, kGpu).is_pinned());
    // Pinned memory is host memory only.
    const std::string error = error_of([] { (void)zeros({4}, kGpu).pin_memory(); });
    EXPECT_NE(error.find("expected a CPU tensor"), std::string::npos) << error;
  }
}

TEST(CudaPinnedTest, WithoutAGpuPinMemoryNamesTheProblem) {
  if (cuda_is_available()) GTEST_SKIP() << "this machine has a GPU";
  const std::string error = error_of([] { (void)zeros({4}).pin_memory(); });
  EXPECT_NE(error.find("no CUDA device is available"), std::string::npos) << error;
}

}  // namespace
}  // namespace grove
