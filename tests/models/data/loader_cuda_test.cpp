// Tests of the batch loader (models/data/loader.h) with batches on a CUDA device: the batches
// arrive on the device with the values and order of a CPU loader of the same seed, after the
// non-blocking copies from pinned memory, also across epochs and when stopped mid-epoch.
// Skipped without a device.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/device.h"
#include "core/stream.h"
#include "models/data/loader.h"

namespace grove::data {
namespace {

#define SKIP_WITHOUT_GPU() \
  if (!::grove::cuda_is_available()) GTEST_SKIP() << "no CUDA device"

TEST(DataLoaderCudaTest, BatchesOnTheDeviceEqualTheCpuLoaders) {
  SKIP_WITHOUT_GPU();
  // inputs: (1000, 3, 8, 8) float32 with distinct values; targets: (1000) int64.
  const std::int64_t count = 1000;
  std::vector<float> values(static_cast<std::size_t>(count * 192));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 0.5f;
  std::vector<std::int64_t> labels(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) labels[static_cast<std::size_t>(i)] = i % 10;
  const Tensor inputs = from_vector(values, {count, 3, 8, 8});
  const Tensor targets = from_vector(labels);

  DataLoader on_cpu(inputs, targets, {.batch_size = 64, .seed = 5});
  DataLoader on_gpu(inputs, targets, {.batch_size = 64, .seed = 5, .device = cuda(0)});
  for (std::int64_t epoch : {0, 1}) {
    on_cpu.start_epoch(epoch);
    on_gpu.start_epoch(epoch);
    std::int64_t batches = 0;
    while (std::optional<Batch> expected = on_cpu.next()) {
      std::optional<Batch> got = on_gpu.next();
      ASSERT_TRUE(got.has_value());
      EXPECT_EQ(got->inputs.device(), cuda(0));
      EXPECT_EQ(got->targets.device(), cuda(0));
      EXPECT_EQ(got->index, expected->index);
      // to(kCPU) waits for the stream, so the asynchronous copies have landed.
      EXPECT_EQ(got->inputs.to(kCPU).to_vector<float>(), expected->inputs.to_vector<float>());
      EXPECT_EQ(got->targets.to(kCPU).to_vector<std::int64_t>(),
                expected->targets.to_vector<std::int64_t>());
      ++batches;
    }
    EXPECT_FALSE(on_gpu.next().has_value());
    EXPECT_EQ(batches, on_cpu.batches_per_epoch());
  }
}

TEST(DataLoaderCudaTest, StopsMidEpochWithCopiesInFlight) {
  SKIP_WITHOUT_GPU();
  const Tensor inputs = zeros({4096, 256});
  const Tensor targets = zeros({4096}, DType::Int64);
  for (int round = 0; round < 3; ++round) {
    DataLoader loader(inputs, targets, {.batch_size = 512, .device = cuda(0), .prefetch = 4});
    loader.start_epoch(round);
    ASSERT_TRUE(loader.next().has_value());
    ASSERT_TRUE(loader.next().has_value());
  }
  synchronize(current_stream(cuda(0)));
}

}  // namespace
}  // namespace grove::data
