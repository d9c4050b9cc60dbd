// The random family on the GPU (ops/cuda/random.cu) where the parity table
// (tests/ops/cuda_parity_test.cpp, which compares one draw of every random op on every layout)
// cannot say enough: randint over ranges up to 2^62, the default generators of both devices
// after manual_seed, and random ops captured into a CUDA DeviceGraph drawing fresh numbers on
// each of several back-to-back replays (Note [Random numbers in captured graphs] in core/rng.h).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "core/device_graph.h"
#include "core/rng.h"
#include "core/stream.h"
#include "ops/elementwise.h"
#include "ops/inplace.h"
#include "ops/random.h"
#include "tests/ops/cuda_test_util.h"

namespace grove::ops::testing {
namespace {

constexpr std::uint64_t kSeed = 20260422;

std::string shape(IntArrayRef sizes) {
  std::ostringstream out;
  out << sizes;
  return out.str();
}

TensorOptions on(DType dtype, Device device) {
  return TensorOptions(dtype).device(device);
}

// The elements of a tensor of dtype T in row-major order, as raw bits (so -0.0 != 0.0 and
// int64s keep all 64 bits).
template <typename T>
std::vector<std::uint64_t> bits_of(const Tensor& tensor) {
  const std::vector<T> values = tensor.to(kCPU).contiguous().to_vector<T>();
  std::vector<std::uint64_t> bits(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const T value = values[i];  // a copy: std::vector<bool> has no addressable elements
    std::memcpy(&bits[i], &value, sizeof(T));
  }
  return bits;
}

std::vector<std::uint64_t> bits(const Tensor& tensor) {
  switch (tensor.dtype()) {
    case DType::Float32:
      return bits_of<float>(tensor);
    case DType::Float64:
      return bits_of<double>(tensor);
    case DType::Int64:
      return bits_of<std::int64_t>(tensor);
    case DType::Int32:
      return bits_of<std::int32_t>(tensor);
    case DType::Bool:
      return bits_of<bool>(tensor);
    case DType::BFloat16:
      return bits_of<BFloat16>(tensor);
    case DType::Float16:
      return bits_of<Float16>(tensor);
  }
  return {};
}

// gpu must equal cpu bit for bit (same dtype, shape and every element).
void expect_bit_identical(const Tensor& cpu, const Tensor& gpu, const std::string& what) {
  ASSERT_TRUE(cpu.device().is_cpu()) << what;
  ASSERT_TRUE(gpu.device().is_cuda()) << what;
  ASSERT_EQ(cpu.dtype(), gpu.dtype()) << what;
  ASSERT_EQ(cpu.sizes(), gpu.sizes()) << what;
  const std::vector<std::uint64_t> expected = bits(cpu);
  const std::vector<std::uint64_t> got = bits(gpu);
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (got[i] != expected[i] && mismatches++ < 5) {
      ADD_FAILURE() << what << ": element " << i << " differs (bits " << got[i] << " vs "
                    << expected[i] << ")";
    }
  }
  EXPECT_EQ(mismatches, 0u) << what << ": " << mismatches << " of " << expected.size()
                            << " elements differ";
}

// Two generators in the same state, one per device.
struct GeneratorPair {
  Generator cpu{kSeed};
  Generator gpu{kSeed};
  void expect_same_state(const std::string& what) const {
    EXPECT_EQ(cpu.offset(), gpu.offset()) << what << ": the devices reserved different counters";
  }
};

const std::vector<DimVector> kFactorySizes = {{},        {0},      {1},       {7},
                                              {3, 0, 2}, {33, 65}, {4, 5, 6}, {100003}};

TEST(CudaRandomTest, RandintIsBitIdenticalToTheCpu) {
  SKIP_WITHOUT_GPU();
  constexpr std::int64_t kHuge = std::int64_t{1} << 62;
  const std::vector<std::pair<std::int64_t, std::int64_t>> ranges = {
      {0, 1},
      {-5, 7},
      {0, 1000003},
      {-kHuge, kHuge},
      {std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max()}};
  GeneratorPair generators;
  for (const auto& [low, high] : ranges) {
    for (const DimVector& sizes : kFactorySizes) {
      const std::string what =
          "randint [" + std::to_string(low) + ", " + std::to_string(high) + ") " + shape(sizes);
      const Tensor cpu = randint(low, high, sizes, &generators.cpu, kCPU);
      const Tensor gpu = randint(low, high, sizes, &generators.gpu, kGpu);
      expect_bit_identical(cpu, gpu, what);
      generators.expect_same_state(what);
    }
  }
}

// Inputs for dropout: nonzero values (1 + |quarters|), so a zero in the output means dropped.
Tensor dropout_input(const Layout& layout, DType dtype, Device device) {
  const Tensor base = add(abs(random_quarters(layout.base, dtype, 7)), 1.0);
  return layout.view(base.to(device));
}

TEST(CudaRandomTest, DefaultGeneratorsOfBothDevicesAgreeAfterManualSeed) {
  SKIP_WITHOUT_GPU();
  manual_seed(kSeed);
  const Tensor cpu = rand({1000}, on(DType::Float32, kCPU));
  const Tensor gpu = rand({1000}, on(DType::Float32, kGpu));
  expect_bit_identical(cpu, gpu, "rand with the default generators");
  EXPECT_EQ(default_generator(kCPU).offset(), default_generator(kGpu).offset());
  // Each call advances the generator: the next draw differs.
  EXPECT_NE(bits(gpu), bits(rand({1000}, on(DType::Float32, kGpu))));
}

// --- capture ---

// Captures `body` (which returns the tensor a replay writes) on a side stream, replays it
// `count` times back to back, copying each replay's output to its own device tensor on the same
// stream without synchronising, and returns those copies plus the generator offset of each
// replay.
struct Replays {
  std::vector<Tensor> outputs;
  std::vector<std::uint64_t> offsets;
  std::uint64_t counters_per_replay = 0;
};

template <typename Body>
Replays capture_and_replay(Body body, int count = 3) {
  static const Stream stream = new_stream(kGpu);
  StreamGuard guard(stream);
  Generator& generator = default_generator(kGpu);
  Replays replays;
  DeviceGraph graph(kGpu);
  const std::uint64_t before_capture = generator.offset();
  graph.begin_capture(stream);
  const Tensor output = body();
  graph.end_capture();
  // Capturing reserves counters relative to the graph's cell: the generator did not move.
  EXPECT_EQ(generator.offset(), before_capture);
  for (int k = 0; k < count; ++k) {
    replays.offsets.push_back(generator.offset());
    graph.replay();
    replays.counters_per_replay = generator.offset() - replays.offsets.back();
    const Tensor copy = empty_like(output);
    copy.copy_(output);  // on the capture stream, after this replay and before the next
    replays.outputs.push_back(copy);
  }
  synchronize(stream);
  return replays;
}

TEST(CudaRandomCaptureTest, ReplaysOfRandDrawFreshNumbersInStreamOrder) {
  SKIP_WITHOUT_GPU();
  manual_seed(kSeed);
  const DimVector sizes = {1000, 33};
  const Replays replays = capture_and_replay([&] { return rand(sizes, on(DType::Float32, kGpu)); });
  ASSERT_EQ(replays.outputs.size(), 3u);
  EXPECT_EQ(replays.counters_per_replay, (1000u * 33u + 3) / 4);
  for (int k = 0; k < 3; ++k) {
    // What an eager call with that replay's generator state gives, on the CPU.
    Generator expected_state(kSeed);
    expected_state.set_offset(replays.offsets[k]);
    const Tensor expected = rand(sizes, on(DType::Float32, kCPU), &expected_state);
    expect_bit_identical(expected, replays.outputs[k], "replay " + std::to_string(k));
    for (int j = 0; j < k; ++j) {
      EXPECT_NE(bits(replays.outputs[j]), bits(replays.outputs[k]))
          << "replays " << j << " and " << k << " drew the same numbers";
    }
  }
  // Eager calls after the replays continue past the replays' counters.
  Generator& generator = default_generator(kGpu);
  EXPECT_EQ(generator.offset(), replays.offsets[2] + replays.counters_per_replay);
  const Tensor after = rand(sizes, on(DType::Float32, kGpu));
  for (const Tensor& replay : replays.outputs) EXPECT_NE(bits(after), bits(replay));
}

TEST(CudaRandomCaptureTest, ReplaysOfDropoutDrawFreshMasks) {
  SKIP_WITHOUT_GPU();
  manual_seed(kSeed + 1);
  const Layout layout{"contiguous", {64, 50}, [](const Tensor& t) { return t; }};
  const Tensor x_cpu = dropout_input(layout, DType::Float32, kCPU);
  const Tensor x = x_cpu.to(kGpu);
  constexpr double kP = 0.3;
  const Replays replays = capture_and_replay([&] { return dropout(x, kP); });
  for (int k = 0; k < 3; ++k) {
    Generator expected_state(kSeed + 1);
    expected_state.set_offset(replays.offsets[k]);
    const Tensor expected = dropout(x_cpu, kP, true, &expected_state);
    expect_bit_identical(expected, replays.outputs[k], "dropout replay " + std::to_string(k));
    // About 30% dropped: with n = 3200, the standard deviation of the dropped fraction is
    // sqrt(0.3 * 0.7 / 3200) ~ 0.008; 0.05 is more than 6 of them.
    const std::vector<float> values = replays.outputs[k].to(kCPU).to_vector<float>();
    double dropped = 0;
    for (float v : values) dropped += v == 0.0f;
    EXPECT_NEAR(dropped / static_cast<double>(values.size()), kP, 0.05);
    for (int j = 0; j < k; ++j) EXPECT_NE(bits(replays.outputs[j]), bits(replays.outputs[k]));
  }
}

// More queued replays than the pinned slots the cell's values are copied from (256 in
// core/cuda/cuda_capture.cpp): a slot is written again only after its copy has run.
TEST(CudaRandomCaptureTest, ManyQueuedReplaysEachSeeTheirOwnCell) {
  SKIP_WITHOUT_GPU();
  manual_seed(kSeed + 2);
  constexpr int kReplays = 600;
  const DimVector sizes = {37};
  const Replays replays =
      capture_and_replay([&] { return rand(sizes, on(DType::Float64, kGpu)); }, kReplays);
  ASSERT_EQ(replays.outputs.size(), static_cast<std::size_t>(kReplays));
  for (int k = 0; k < kReplays; ++k) {
    Generator expected_state(kSeed + 2);
    expected_state.set_offset(replays.offsets[k]);
    const Tensor expected = rand(sizes, on(DType::Float64, kCPU), &expected_state);
    expect_bit_identical(expected, replays.outputs[k], "replay " + std::to_string(k));
  }
}

}  // namespace
}  // namespace grove::ops::testing
