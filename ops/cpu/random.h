// CPU kernels of the random family (ops/random.h), and the per-element recipes that turn Philox
// words into uniform, normal, integer and keep/drop values. The recipes are shared with the
// in-place random fills (uniform_, normal_ in ops/cpu/inplace.cpp).
//
// Which words an element uses depends only on its flat (row-major) index in the output, never on
// its strides, so a non-contiguous target gets the same values as a contiguous one:
//   float32 uniform, dropout : element i <- counter i / 4, word i % 4             (1 word)
//   float64 uniform, randint : element i <- counter i / 2, words 2(i % 2), +1      (2 words)
//   float32 normal           : element i <- counter i / 4, Box-Muller pair (i % 4) / 2
//   float64 normal           : element i <- counter i / 2, one Box-Muller pair per counter
// Counters are relative to the PhiloxArgs' offset, resolved inside the kernel
// (Note [Random numbers in captured graphs] in core/rng.h).
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/rng.h"
#include "core/tensor.h"
#include "ops/dispatch.h"
#include "ops/random_counters.h"

namespace grove::ops::cpu {

void rand(const OpCall& call, const OpOutputs& outputs);
void randn(const OpCall& call, const OpOutputs& outputs);
void randint(const OpCall& call, const OpOutputs& outputs);
void dropout(const OpCall& call, const OpOutputs& outputs);

// Fill `out` (float32 or float64, any strides) with low + (high - low) * U[0, 1), or with
// mean + std * N(0, 1); the caller has reserved counters_for_uniform / counters_for_normal
// (ops/random_counters.h).
void launch_uniform(const Tensor& out, double low, double high, PhiloxArgs args);
void launch_normal(const Tensor& out, double mean, double std, PhiloxArgs args);

// The words of one counter at a time, cached: consecutive elements share a Philox call.
class PhiloxWords {
 public:
  PhiloxWords(std::uint64_t seed, std::uint64_t offset) : seed_(seed), offset_(offset) {}

  std::uint32_t word(std::uint64_t counter, std::uint64_t which) {
    if (counter != cached_counter_ || !cached_) {
      words_ = philox4x32_10(offset_ + counter, 0, seed_);
      cached_counter_ = counter;
      cached_ = true;
    }
    return words_[which];
  }

 private:
  std::uint64_t seed_;
  std::uint64_t offset_;
  std::array<std::uint32_t, 4> words_{};
  std::uint64_t cached_counter_ = 0;
  bool cached_ = false;
};

// U[0, 1) for element i, with 24 random bits (float) or 53 (double).
template <typename T>
T uniform_at(PhiloxWords& words, std::uint64_t i) {
  if constexpr (std::is_same_v<T, float>) {
    return uniform_float(words.word(i / 4, i % 4));
  } else {
    const std::uint64_t first = 2 * (i % 2);
    return uniform_double(words.word(i / 2, first), words.word(i / 2, first + 1));
  }
}

// N(0, 1) for element i by Box-Muller: r = sqrt(-2 ln u1), theta = 2 pi u2; the pair's first
// element is r cos(theta), the second r sin(theta). u1 = 1 - U[0, 1) lies in (0, 1], so the log
// is finite; with float32's 24 bits the largest |value| is sqrt(2 * 24 ln 2) ~ 5.8.
template <typename T>
T normal_at(PhiloxWords& words, std::uint64_t i) {
  constexpr double kTwoPi = 6.283185307179586;
  double u1, u2;
  if constexpr (std::is_same_v<T, float>) {
    const std::uint64_t pair = (i % 4) / 2;
    u1 = 1.0 - uniform_float(words.word(i / 4, 2 * pair));
    u2 = uniform_float(words.word(i / 4, 2 * pair + 1));
  } else {
    u1 = 1.0 - uniform_double(words.word(i / 2, 0), words.word(i / 2, 1));
    u2 = uniform_double(words.word(i / 2, 2), words.word(i / 2, 3));
  }
  const double radius = std::sqrt(-2.0 * std::log(u1));
  const double value = i % 2 == 0 ? radius * std::cos(kTwoPi * u2) : radius * std::sin(kTwoPi * u2);
  return static_cast<T>(value);
}

// 64 random bits for element i (randint).
inline std::uint64_t bits64_at(PhiloxWords& words, std::uint64_t i) {
  const std::uint64_t first = 2 * (i % 2);
  return (static_cast<std::uint64_t>(words.word(i / 2, first)) << 32) |
         words.word(i / 2, first + 1);
}

}  // namespace grove::ops::cpu
