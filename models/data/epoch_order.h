// The order in which a DataLoader visits samples: a permutation that depends only on
// (seed, epoch), the same on every machine and standard library.
//
// What it is not: std::shuffle (whose results differ between standard libraries) or anything
// seeded from the clock.
//
// How the permutation is made (exactly, so that other implementations can reproduce it):
// the generator is splitmix64 (Steele, Lea and Flood 2014): state += 0x9E3779B97F4A7C15, and the
// output is the state mixed by
//   z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9; z = (z ^ (z >> 27)) * 0x94D049BB133111EB;
//   z ^= z >> 31.
// For (seed, epoch) the initial state is splitmix64_mix(seed) + epoch (a 64-bit wrap-around sum;
// epochs are consecutive states of a mixed seed, so nearby seeds do not give related orders).
// The permutation starts as 0, 1, ..., n - 1 and is shuffled by Fisher-Yates from the back: for
// i = n - 1 down to 1, j is drawn uniformly from [0, i] and elements i and j are swapped. j is
// drawn by Lemire's method: with x the next output and r = i + 1, m = x * r as a 128-bit
// product; if (m mod 2^64) < (2^64 - r) mod r, draw again; j = m >> 64. Every step is integer
// arithmetic, so any language can reproduce the order exactly.
#pragma once

#include <cstdint>
#include <vector>

namespace grove::data {

// The mixing function of splitmix64 (a bijection of 64-bit words).
std::uint64_t splitmix64_mix(std::uint64_t z);

// A splitmix64 stream. Not thread-safe (a plain value).
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t state) : state_(state) {}
  std::uint64_t next();
  // Uniform in [0, range) without bias (Lemire's method); range >= 1.
  std::uint64_t below(std::uint64_t range);

 private:
  std::uint64_t state_;
};

// The order of epoch `epoch` over `count` samples; see the top of this file.
// Allocates count entries. Thread-safe (pure).
std::vector<std::int64_t> epoch_permutation(std::int64_t count, std::uint64_t seed,
                                            std::int64_t epoch);

}  // namespace grove::data
