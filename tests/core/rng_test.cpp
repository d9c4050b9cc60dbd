// Tests of the random number machinery: Philox 4x32-10 against the known-answer vectors
// published with Random123 (kat_vectors), the Generator's seed and offset bookkeeping, the
// uniform conversions, and Note [Random numbers in captured graphs] (rng.h): a captured random
// kernel draws fresh numbers on every replay, the same ones an eager run would draw at that
// generator offset.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/device_graph.h"
#include "core/rng.h"
#include "core/stream.h"

namespace grove {
namespace {

using Words = std::array<std::uint32_t, 4>;

// philox4x32_10 takes the 128-bit counter as two 64-bit halves, low word first, and the key as
// one 64-bit value; Random123 lists them as 32-bit words x0..x3 and k0, k1.
Words philox_from_words(const Words& counter, std::uint32_t k0, std::uint32_t k1) {
  const std::uint64_t low = counter[0] | (static_cast<std::uint64_t>(counter[1]) << 32);
  const std::uint64_t high = counter[2] | (static_cast<std::uint64_t>(counter[3]) << 32);
  const std::uint64_t key = k0 | (static_cast<std::uint64_t>(k1) << 32);
  return philox4x32_10(low, high, key);
}

// --- Philox known answers (Random123 1.09, examples/kat_vectors, "philox4x32 10") ---

TEST(RngPhiloxTest, ZeroCounterAndKey) {
  EXPECT_EQ(philox_from_words({0, 0, 0, 0}, 0, 0),
            (Words{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
}

TEST(RngPhiloxTest, AllOnesCounterAndKey) {
  EXPECT_EQ(philox_from_words({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, 0xffffffffu,
                              0xffffffffu),
            (Words{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
}

TEST(RngPhiloxTest, DigitsOfPi) {
  EXPECT_EQ(philox_from_words({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, 0xa4093822u,
                              0x299f31d0u),
            (Words{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
}

TEST(RngPhiloxTest, NeighbouringCountersGiveUnrelatedWords) {
  // Counter-based: each counter is its own draw, and a one-bit change changes every word.
  const Words first = philox4x32_10(0, 0, 42);
  const Words second = philox4x32_10(1, 0, 42);
  const Words other_key = philox4x32_10(0, 0, 43);
  for (int i = 0; i < 4; ++i) {
    EXPECT_NE(first[i], second[i]) << i;
    EXPECT_NE(first[i], other_key[i]) << i;
  }
  EXPECT_EQ(philox4x32_10(0, 0, 42), first);  // and a pure function
}

// --- Generator bookkeeping ---

TEST(RngGeneratorTest, ReserveHandsOutConsecutiveOffsets) {
  Generator generator(1234);
  EXPECT_EQ(generator.seed(), 1234u);
  EXPECT_EQ(generator.offset(), 0u);
  const PhiloxArgs first = generator.reserve(5);
  const PhiloxArgs second = generator.reserve(3);
  EXPECT_EQ(first.seed, 1234u);
  EXPECT_EQ(first.offset, 0u);
  EXPECT_EQ(first.cell, nullptr);
  EXPECT_EQ(second.offset, 5u);
  EXPECT_EQ(generator.offset(), 8u);
  EXPECT_EQ(second.resolve(), (std::pair<std::uint64_t, std::uint64_t>{1234u, 5u}));
}

TEST(RngGeneratorTest, ManualSeedResetsTheOffset) {
  Generator generator(1);
  generator.reserve(10);
  generator.manual_seed(99);
  EXPECT_EQ(generator.seed(), 99u);
  EXPECT_EQ(generator.offset(), 0u);
  generator.set_offset(17);
  EXPECT_EQ(generator.reserve(1).offset, 17u);
}

TEST(RngGeneratorTest, GlobalManualSeedReseedsTheDefaultGenerator) {
  Generator& generator = default_generator(kCPU);
  generator.reserve(3);
  manual_seed(2024);
  EXPECT_EQ(generator.seed(), 2024u);
  EXPECT_EQ(generator.offset(), 0u);
  EXPECT_EQ(&default_generator(kCPU), &generator);  // the same object, reseeded
  manual_seed(kDefaultSeed);  // leave the process as it started for the tests after this one
}

// --- uniform conversion ---

TEST(RngUniformTest, UniformFloatCoversZeroToJustBelowOne) {
  EXPECT_EQ(uniform_float(0u), 0.0f);
  EXPECT_LT(uniform_float(0xffffffffu), 1.0f);
  EXPECT_EQ(uniform_float(0xffffffffu), 1.0f - 1.0f / 16777216.0f);  // 24 bits, exact
  EXPECT_LT(uniform_double(0xffffffffu, 0xffffffffu), 1.0);
  EXPECT_EQ(uniform_double(0u, 0u), 0.0);
}

TEST(RngUniformTest, UniformFloatsFromPhiloxAreUniform) {
  // n = 400000 draws of U[0,1): the mean has standard deviation sqrt(1/12 / n) ~ 4.6e-4 and the
  // fraction in each of 10 bins has sd sqrt(0.1 * 0.9 / n) ~ 4.7e-4. Tolerances of 3e-3 are
  // more than 6 sd: a correct generator fails with probability below 1e-9, while a biased one
  // (for example using only 16 bits, or a skewed conversion) is far outside.
  constexpr int kCounters = 100000;
  constexpr int kDraws = 4 * kCounters;
  double sum = 0.0;
  std::array<int, 10> bins{};
  for (int c = 0; c < kCounters; ++c) {
    for (std::uint32_t word : philox4x32_10(static_cast<std::uint64_t>(c), 0, 7)) {
      const float value = uniform_float(word);
      ASSERT_GE(value, 0.0f);
      ASSERT_LT(value, 1.0f);
      sum += value;
      ++bins[static_cast<std::size_t>(value * 10.0f)];
    }
  }
  EXPECT_NEAR(sum / kDraws, 0.5, 3e-3);
  for (int bin : bins) EXPECT_NEAR(static_cast<double>(bin) / kDraws, 0.1, 3e-3);
}

// --- capture (Note [Random numbers in captured graphs]) ---

// A random kernel as ops write them: reserve counters, then let the kernel resolve seed and
// offset when it runs. Element i uses counter offset + i / 4, word i % 4.
void fill_uniform(Generator& generator, Stream stream, float* out, std::int64_t n) {
  const PhiloxArgs args = generator.reserve(static_cast<std::uint64_t>((n + 3) / 4));
  launch_cpu(stream, [args, out, n] {
    const auto [seed, offset] = args.resolve();
    for (std::int64_t i = 0; i < n; ++i) {
      const Words words = philox4x32_10(offset + static_cast<std::uint64_t>(i / 4), 0, seed);
      out[i] = uniform_float(words[static_cast<std::size_t>(i % 4)]);
    }
  });
}

Stream rng_capture_stream() {
  static const Stream stream = new_stream(kCPU);
  return stream;
}

class RngCaptureTest : public ::testing::Test {
 protected:
  static constexpr std::int64_t kN = 10;  // 3 counters per run
  void SetUp() override {
    manual_seed(kSeed);
    default_generator(kCPU).set_offset(kStartOffset);
    graph.begin_capture(rng_capture_stream());
    fill_uniform(default_generator(kCPU), rng_capture_stream(), buffer.data(), kN);
    graph.end_capture();
  }
  void TearDown() override { manual_seed(kDefaultSeed); }
  // What an eager run draws at `offset` with the test's seed.
  std::vector<float> eager_at(std::uint64_t offset) {
    Generator generator(kSeed);
    generator.set_offset(offset);
    std::vector<float> values(kN);
    fill_uniform(generator, default_stream(kCPU), values.data(), kN);
    return values;
  }

  static constexpr std::uint64_t kSeed = 31337;
  static constexpr std::uint64_t kStartOffset = 100;
  std::vector<float> buffer = std::vector<float>(kN, -1.0f);
  DeviceGraph graph{kCPU};
};

TEST_F(RngCaptureTest, CaptureRecordsTheKernelAndDoesNotAdvanceTheGenerator) {
  EXPECT_EQ(graph.num_nodes(), 1u);
  EXPECT_EQ(buffer, std::vector<float>(kN, -1.0f));  // not run
  EXPECT_EQ(default_generator(kCPU).offset(), kStartOffset);
}

TEST_F(RngCaptureTest, EachReplayDrawsFreshNumbers) {
  graph.replay();
  const std::vector<float> first = buffer;
  graph.replay();
  const std::vector<float> second = buffer;
  EXPECT_NE(first, second);
  EXPECT_NE(first, std::vector<float>(kN, -1.0f));
}

TEST_F(RngCaptureTest, ReplaysDrawWhatEagerRunsWouldAtTheGeneratorsOffset) {
  graph.replay();
  EXPECT_EQ(buffer, eager_at(kStartOffset));
  graph.replay();
  EXPECT_EQ(buffer, eager_at(kStartOffset + 3));
}

TEST_F(RngCaptureTest, EachReplayAdvancesTheGeneratorByWhatTheCaptureReserved) {
  Generator& generator = default_generator(kCPU);
  graph.replay();
  EXPECT_EQ(generator.offset(), kStartOffset + 3);
  graph.replay();
  EXPECT_EQ(generator.offset(), kStartOffset + 6);
  // An eager draw after the replays does not reuse their counters.
  EXPECT_EQ(generator.reserve(1).offset, kStartOffset + 6);
}

TEST_F(RngCaptureTest, ReplaysFollowReseeding) {
  graph.replay();
  const std::vector<float> before = buffer;
  manual_seed(kSeed);  // back to offset 0 with the same seed
  default_generator(kCPU).set_offset(kStartOffset);
  graph.replay();
  EXPECT_EQ(buffer, before);  // the same generator state gives the same numbers
}

}  // namespace
}  // namespace grove
