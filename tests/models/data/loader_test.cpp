// Tests of the batch loader (models/data/loader.h) and its epoch order
// (models/data/epoch_order.h) on the CPU: the permutation against golden values from the
// documented recipe (tests/models/data/golden.py), every sample once per epoch with and without
// drop_last, the same order for the same (seed, epoch) and another for another, resuming at a
// batch, stopping mid-epoch, worker errors reaching next(), and argument errors.
#include "models/data/loader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "models/data/epoch_order.h"
#include "tests/models/data/data_test_util.h"

namespace grove::data {
namespace {

using testing::error_of;

// inputs: (count, 2) int64 with row i = (10 i, 10 i + 1); targets: (count) int64 = i. A batch's
// targets say which samples it holds, and its inputs must be those samples' rows.
struct Dataset {
  Tensor inputs;
  Tensor targets;
};
Dataset numbered_dataset(std::int64_t count) {
  std::vector<std::int64_t> inputs;
  std::vector<std::int64_t> targets;
  for (std::int64_t i = 0; i < count; ++i) {
    inputs.push_back(10 * i);
    inputs.push_back(10 * i + 1);
    targets.push_back(i);
  }
  return {from_vector(inputs, {count, 2}), from_vector(targets, {count})};
}

// The sample ids of every batch of one epoch, checking each batch's rows against its ids.
std::vector<std::vector<std::int64_t>> epoch_ids(DataLoader& loader, std::int64_t epoch,
                                                 std::int64_t first_batch = 0) {
  loader.start_epoch(epoch, first_batch);
  std::vector<std::vector<std::int64_t>> batches;
  while (std::optional<Batch> batch = loader.next()) {
    EXPECT_EQ(batch->epoch, epoch);
    EXPECT_EQ(batch->index, first_batch + static_cast<std::int64_t>(batches.size()));
    const std::vector<std::int64_t> ids = batch->targets.to_vector<std::int64_t>();
    const std::vector<std::int64_t> rows = batch->inputs.to_vector<std::int64_t>();
    EXPECT_EQ(batch->inputs.sizes().vec(),
              (std::vector<std::int64_t>{static_cast<std::int64_t>(ids.size()), 2}));
    for (std::size_t k = 0; k < ids.size(); ++k) {
      EXPECT_EQ(rows[2 * k], 10 * ids[k]);
      EXPECT_EQ(rows[2 * k + 1], 10 * ids[k] + 1);
    }
    batches.push_back(ids);
  }
  EXPECT_FALSE(loader.next().has_value());  // stays over
  return batches;
}

std::vector<std::int64_t> flatten(const std::vector<std::vector<std::int64_t>>& batches) {
  std::vector<std::int64_t> all;
  for (const auto& batch : batches) all.insert(all.end(), batch.begin(), batch.end());
  return all;
}

TEST(EpochOrderTest, MatchesGoldenPermutations) {
  EXPECT_EQ(epoch_permutation(10, 42, 3),
            (std::vector<std::int64_t>{2, 0, 1, 9, 5, 3, 7, 4, 8, 6}));
  EXPECT_EQ(epoch_permutation(10, 0, 0), (std::vector<std::int64_t>{4, 9, 2, 5, 1, 7, 6, 0, 3, 8}));
  EXPECT_EQ(epoch_permutation(16, 7, 1),
            (std::vector<std::int64_t>{12, 7, 1, 0, 3, 2, 5, 8, 11, 14, 13, 6, 9, 10, 4, 15}));
  EXPECT_TRUE(epoch_permutation(0, 1, 1).empty());
  EXPECT_EQ(epoch_permutation(1, 1, 1), (std::vector<std::int64_t>{0}));
}

TEST(EpochOrderTest, IsAPermutation) {
  std::vector<std::int64_t> order = epoch_permutation(1000, 9, 4);
  std::sort(order.begin(), order.end());
  std::vector<std::int64_t> expected(1000);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(order, expected);
}

TEST(DataLoaderTest, EverySampleOncePerEpochWithPartialLastBatch) {
  const Dataset data = numbered_dataset(10);
  DataLoader loader(data.inputs, data.targets, {.batch_size = 3, .seed = 11});
  EXPECT_EQ(loader.size(), 10);
  EXPECT_EQ(loader.batches_per_epoch(), 4);
  const auto batches = epoch_ids(loader, 0);
  ASSERT_EQ(batches.size(), 4u);
  EXPECT_EQ(batches.back().size(), 1u);
  std::vector<std::int64_t> all = flatten(batches);
  EXPECT_EQ(all, epoch_permutation(10, 11, 0));  // the documented order
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(DataLoaderTest, DropLastDropsOnlyThePartialBatch) {
  const Dataset data = numbered_dataset(10);
  DataLoader loader(data.inputs, data.targets, {.batch_size = 3, .seed = 11, .drop_last = true});
  EXPECT_EQ(loader.batches_per_epoch(), 3);
  const auto batches = epoch_ids(loader, 2);
  ASSERT_EQ(batches.size(), 3u);
  std::vector<std::int64_t> all = flatten(batches);
  const std::vector<std::int64_t> order = epoch_permutation(10, 11, 2);
  EXPECT_EQ(all, std::vector<std::int64_t>(order.begin(), order.begin() + 9));
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end());  // no sample twice

  DataLoader exact(data.inputs, data.targets, {.batch_size = 5, .drop_last = true});
  EXPECT_EQ(exact.batches_per_epoch(), 2);  // nothing to drop
}

TEST(DataLoaderTest, UnshuffledIsInOrder) {
  const Dataset data = numbered_dataset(7);
  DataLoader loader(data.inputs, data.targets, {.batch_size = 2, .shuffle = false});
  for (std::int64_t epoch : {0, 5}) {
    EXPECT_EQ(flatten(epoch_ids(loader, epoch)), (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6}));
  }
}

TEST(DataLoaderTest, OrderDependsOnlyOnSeedAndEpoch) {
  const Dataset data = numbered_dataset(50);
  DataLoader first(data.inputs, data.targets, {.batch_size = 8, .seed = 3});
  DataLoader second(data.inputs, data.targets, {.batch_size = 8, .seed = 3, .prefetch = 5});
  DataLoader other_seed(data.inputs, data.targets, {.batch_size = 8, .seed = 4});
  const auto epoch0 = epoch_ids(first, 0);
  EXPECT_EQ(epoch_ids(second, 0), epoch0);
  EXPECT_NE(epoch_ids(first, 1), epoch0);
  EXPECT_NE(epoch_ids(other_seed, 0), epoch0);
  EXPECT_EQ(epoch_ids(first, 0), epoch0);  // again, after another epoch
}

TEST(DataLoaderTest, ResumingAtABatchGivesTheRemainingBatches) {
  const Dataset data = numbered_dataset(23);
  DataLoader loader(data.inputs, data.targets, {.batch_size = 4, .seed = 8});
  const auto whole = epoch_ids(loader, 6);
  ASSERT_EQ(whole.size(), 6u);
  DataLoader resumed(data.inputs, data.targets, {.batch_size = 4, .seed = 8});
  const auto rest = epoch_ids(resumed, 6, 4);  // checks the batch indices start at 4
  EXPECT_EQ(rest, std::vector<std::vector<std::int64_t>>(whole.begin() + 4, whole.end()));
  EXPECT_TRUE(epoch_ids(resumed, 6, 6).empty());  // all trained: nothing left
}

TEST(DataLoaderTest, KeepsTrailingDimensionsAndDtypes) {
  // inputs: (5, 1, 2, 2) float32 with sample i filled with i; targets: (5) int64.
  std::vector<float> values(20);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i / 4);
  const Tensor inputs = from_vector(values, {5, 1, 2, 2});
  const Tensor targets = from_vector<std::int64_t>({0, 1, 2, 3, 4});
  DataLoader loader(inputs, targets, {.batch_size = 2, .seed = 1});
  loader.start_epoch(0);
  const std::optional<Batch> batch = loader.next();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->inputs.sizes().vec(), (std::vector<std::int64_t>{2, 1, 2, 2}));
  EXPECT_EQ(batch->inputs.dtype(), DType::Float32);
  EXPECT_TRUE(batch->inputs.is_contiguous());
  EXPECT_FALSE(batch->inputs.is_alias_of(inputs));  // a new tensor, not a view of the data set
  const std::vector<std::int64_t> ids = batch->targets.to_vector<std::int64_t>();
  const std::vector<float> pixels = batch->inputs.to_vector<float>();
  for (std::size_t k = 0; k < 2; ++k) {
    for (std::size_t p = 0; p < 4; ++p) {
      EXPECT_EQ(pixels[k * 4 + p], static_cast<float>(ids[k]));
    }
  }
}

TEST(DataLoaderTest, NonContiguousDatasetIsRead) {
  // The transpose of (3, 4) holds 4 samples of 3 values: sample i = (i, 4 + i, 8 + i).
  const Tensor base = arange(12, DType::Int64).view({3, 4});
  const Tensor inputs = base.t();
  DataLoader loader(inputs, from_vector<std::int64_t>({0, 1, 2, 3}),
                    {.batch_size = 4, .shuffle = false});
  loader.start_epoch(0);
  EXPECT_EQ(loader.next()->inputs.to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
}

TEST(DataLoaderTest, EmptyDatasetHasNoBatches) {
  const Dataset data = numbered_dataset(0);
  DataLoader loader(data.inputs, data.targets, {.batch_size = 4});
  EXPECT_EQ(loader.batches_per_epoch(), 0);
  loader.start_epoch(0);
  EXPECT_FALSE(loader.next().has_value());
}

TEST(DataLoaderTest, DestroyingOrRestartingMidEpochStopsTheWorker) {
  const Dataset data = numbered_dataset(2000);
  {
    DataLoader loader(data.inputs, data.targets, {.batch_size = 7, .prefetch = 3});
    loader.start_epoch(0);
    ASSERT_TRUE(loader.next().has_value());
  }  // the worker waits for room in a full queue: the destructor must wake and join it
  {
    DataLoader loader(data.inputs, data.targets, {.batch_size = 7});
    loader.start_epoch(0);  // destroyed before any next()
  }
  DataLoader loader(data.inputs, data.targets, {.batch_size = 500, .seed = 2});
  loader.start_epoch(0);
  ASSERT_TRUE(loader.next().has_value());
  // A new epoch drops what the old worker prepared and starts from its own first batch.
  loader.start_epoch(1);
  const std::optional<Batch> batch = loader.next();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->epoch, 1);
  EXPECT_EQ(batch->index, 0);
  const std::vector<std::int64_t> order = epoch_permutation(2000, 2, 1);
  EXPECT_EQ(batch->targets.to_vector<std::int64_t>(),
            std::vector<std::int64_t>(order.begin(), order.begin() + 500));
}

TEST(DataLoaderTest, WorkerErrorReachesNextAfterEarlierBatches) {
  const Dataset data = numbered_dataset(20);
  LoaderOptions options{.batch_size = 4, .shuffle = false};
  options.transform = [](Batch& batch) {
    if (batch.index == 2) throw Error("transform failed on batch 2", __FILE__, __LINE__);
  };
  DataLoader loader(data.inputs, data.targets, options);
  loader.start_epoch(0);
  EXPECT_EQ(loader.next()->index, 0);
  EXPECT_EQ(loader.next()->index, 1);
  EXPECT_NE(error_of([&] { loader.next(); }).find("transform failed on batch 2"),
            std::string::npos);
  // Every later next() of the epoch says so again instead of ending the epoch early.
  EXPECT_NE(error_of([&] { loader.next(); }).find("transform failed"), std::string::npos);
  // Exceptions of any type arrive as themselves.
  LoaderOptions throwing{.batch_size = 4};
  throwing.transform = [](Batch&) { throw std::runtime_error("not a grove error"); };
  DataLoader other(data.inputs, data.targets, throwing);
  other.start_epoch(0);
  EXPECT_THROW(other.next(), std::runtime_error);
  // A new epoch starts clean.
  loader.start_epoch(0, 3);
  EXPECT_EQ(loader.next()->index, 3);
}

TEST(DataLoaderTest, TransformChangesBatchesOnTheWorker) {
  const Dataset data = numbered_dataset(6);
  LoaderOptions options{.batch_size = 3, .shuffle = false};
  options.transform = [](Batch& batch) {
    std::int64_t* values = batch.targets.data<std::int64_t>();
    for (std::int64_t i = 0; i < batch.targets.numel(); ++i) values[i] += 100;
  };
  DataLoader loader(data.inputs, data.targets, options);
  loader.start_epoch(0);
  EXPECT_EQ(loader.next()->targets.to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{100, 101, 102}));
  EXPECT_EQ(data.targets.to_vector<std::int64_t>()[0], 0);  // the data set is untouched
}

TEST(DataLoaderTest, ArgumentErrors) {
  const Dataset data = numbered_dataset(6);
  const std::string batch =
      error_of([&] { DataLoader(data.inputs, data.targets, {.batch_size = 0}); });
  EXPECT_NE(batch.find("expected batch_size >= 1, but got 0"), std::string::npos) << batch;
  const std::string prefetch =
      error_of([&] { DataLoader(data.inputs, data.targets, {.batch_size = 2, .prefetch = 0}); });
  EXPECT_NE(prefetch.find("expected prefetch >= 1"), std::string::npos) << prefetch;
  const std::string counts =
      error_of([&] { DataLoader(data.inputs, numbered_dataset(5).targets, {.batch_size = 2}); });
  EXPECT_NE(counts.find("got 6 inputs and 5 targets"), std::string::npos) << counts;
  const std::string scalar =
      error_of([&] { DataLoader(full({}, 1.0), data.targets, {.batch_size = 2}); });
  EXPECT_NE(scalar.find("first dimension of samples"), std::string::npos) << scalar;

  DataLoader loader(data.inputs, data.targets, {.batch_size = 4});
  const std::string not_started = error_of([&] { loader.next(); });
  EXPECT_NE(not_started.find("call start_epoch(epoch) before next()"), std::string::npos)
      << not_started;
  const std::string first = error_of([&] { loader.start_epoch(0, 3); });
  EXPECT_NE(first.find("first_batch in [0, 2]"), std::string::npos) << first;
  const std::string epoch = error_of([&] { loader.start_epoch(-1); });
  EXPECT_NE(epoch.find("epoch >= 0"), std::string::npos) << epoch;

  if (!cuda_is_available()) {
    const std::string device = error_of(
        [&] { DataLoader(data.inputs, data.targets, {.batch_size = 2, .device = cuda(0)}); });
    EXPECT_NE(device.find("no CUDA device is available"), std::string::npos) << device;
  }
}

}  // namespace
}  // namespace grove::data
