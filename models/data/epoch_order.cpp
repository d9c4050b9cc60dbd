// The loader's epoch permutation (epoch_order.h): splitmix64 and Fisher-Yates, written out so
// the order is the same everywhere. See epoch_order.h for the exact recipe.
//
// What it is not: a general random-number library (grove's Philox generator in core/rng.h is
// that); this file only orders samples.
//
// Invariant: epoch_permutation returns each of 0..count-1 exactly once.
#include "models/data/epoch_order.h"

#include <numeric>
#include <utility>

#include "core/error.h"

namespace grove::data {

std::uint64_t splitmix64_mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

std::uint64_t SplitMix64::next() {
  state_ += 0x9E3779B97F4A7C15ULL;
  return splitmix64_mix(state_);
}

std::uint64_t SplitMix64::below(std::uint64_t range) {
  GROVE_INTERNAL_ASSERT(range >= 1, "SplitMix64::below needs a non-empty range");
  // Lemire, "Fast random integer generation in an interval" (2019): the high word of x * range
  // is uniform once the low words below (2^64 - range) mod range are rejected.
  const std::uint64_t threshold = (0 - range) % range;
  while (true) {
    const unsigned __int128 product = static_cast<unsigned __int128>(next()) * range;
    if (static_cast<std::uint64_t>(product) >= threshold) {
      return static_cast<std::uint64_t>(product >> 64);
    }
  }
}

std::vector<std::int64_t> epoch_permutation(std::int64_t count, std::uint64_t seed,
                                            std::int64_t epoch) {
  GROVE_CHECK(count >= 0, "epoch_permutation: expected a sample count >= 0, but got ", count);
  std::vector<std::int64_t> order(static_cast<std::size_t>(count));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  SplitMix64 generator(splitmix64_mix(seed) + static_cast<std::uint64_t>(epoch));
  for (std::int64_t i = count - 1; i >= 1; --i) {
    const auto j = static_cast<std::int64_t>(generator.below(static_cast<std::uint64_t>(i) + 1));
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(j)]);
  }
  return order;
}

}  // namespace grove::data
