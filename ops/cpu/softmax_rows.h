// Row math shared by the CPU softmax and loss kernels (ops/cpu/softmax.cpp, ops/cpu/loss.cpp):
// the maximum of a row and log(sum(exp(x))) of a row, with a vectorised exp for dense float32
// rows and scalar loops in double for the rest.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include <Eigen/Core>

namespace grove::ops::cpu::rows {

// --- dense float32 rows: a vectorisable exp ---
// Built for plain x86-64 (SSE2, GROVE_MARCH empty; the default is now x86-64-v3), Eigen's float
// exp took about 2 ns per element here, three quarters of a softmax; GCC vectorises the plain
// loop below (four floats per SSE2 instruction, eight with AVX2) at about half that. Softmax only
// needs exp of x - max <= 0, which keeps the function short.

// a if condition else b, bit by bit: GCC does not if-convert a float ?: inside a longer
// expression (under its default -ftrapping-math), which would stop the loop vectorising.
inline float select(bool condition, float a, float b) {
  const std::int32_t mask = -static_cast<std::int32_t>(condition);
  return std::bit_cast<float>((std::bit_cast<std::int32_t>(a) & mask) |
                              (std::bit_cast<std::int32_t>(b) & ~mask));
}

// exp(x) for x <= 0 (Cephes' expf: x = k ln 2 + r with |r| <= ln 2 / 2, exp(r) by a degree-7
// polynomial, 2^k put into the exponent bits). Within 8.2e-8 relative on [-87.3, 0] (checked
// against double exp on every 7th float); 0 below, where exp is under float's smallest normal
// (exp(-inf) = 0). NaN stays NaN.
inline float exp_nonpositive(float x) {
  constexpr float kLowest = -87.33654f;  // below this exp(x) is under float's smallest normal
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float clamped = select(x < kLowest, kLowest, x);
  const float shifted = clamped * 1.44269504088896341f + kRound;  // x / ln 2 + kRound
  const std::int32_t k = std::bit_cast<std::int32_t>(shifted) - std::bit_cast<std::int32_t>(kRound);
  const float k_float = shifted - kRound;
  const float r = (clamped - k_float * 0.693359375f) + k_float * 2.12194440e-4f;  // x - k ln 2
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float result = (p * r * r + r + 1.0f) * std::bit_cast<float>((k + 127) << 23);
  return select(x != x, x, select(x < kLowest, 0.0f, result));
}

// The sum, in double, of exp(x[j] - max) over n elements, which are also stored in `out` unless
// it is null. Float partial sums run over blocks of kBlock terms (eight lanes), so the sum's
// error does not grow with the row length.
inline double shifted_exp_sum(const float* x, std::int64_t n, float max, float* out) {
  constexpr std::int64_t kBlock = 256;
  float buffer[kBlock];
  double total = 0.0;
  for (std::int64_t start = 0; start < n; start += kBlock) {
    const std::int64_t length = std::min(kBlock, n - start);
    float* terms = out != nullptr ? out + start : buffer;
    for (std::int64_t j = 0; j < length; ++j) terms[j] = exp_nonpositive(x[start + j] - max);
    float lanes[8] = {};
    std::int64_t j = 0;
    for (; j + 8 <= length; j += 8) {
      for (int k = 0; k < 8; ++k) lanes[k] += terms[j + k];
    }
    for (; j < length; ++j) lanes[0] += terms[j];
    for (const float lane : lanes) total += lane;
  }
  return total;
}

inline float dense_max(const float* x, std::int64_t n) {
  return Eigen::Map<const Eigen::ArrayXf>(x, n).maxCoeff();  // vectorised
}

// --- every other row (float64, strided): scalar loops in double ---

// Largest of n > 0 values at stride `stride`; NaN if any is NaN.
template <typename T>
double row_max(const T* x, std::int64_t n, std::int64_t stride) {
  double best = static_cast<double>(x[0]);
  for (std::int64_t j = 1; j < n; ++j) {
    const double v = static_cast<double>(x[j * stride]);
    if (v > best || v != v) best = std::isnan(best) ? best : v;
  }
  return best;
}

// log(sum(exp(x))) over n > 0 values, computed as max + log(sum(exp(x - max))).
template <typename T>
double log_sum_exp(const T* x, std::int64_t n, std::int64_t stride) {
  if constexpr (std::is_same_v<T, float>) {
    if (stride == 1) {
      const float max = dense_max(x, n);
      return static_cast<double>(max) + std::log(shifted_exp_sum(x, n, max, nullptr));
    }
  }
  const double max = row_max(x, n, stride);
  double sum = 0.0;
  for (std::int64_t j = 0; j < n; ++j) sum += std::exp(static_cast<double>(x[j * stride]) - max);
  return max + std::log(sum);
}

}  // namespace grove::ops::cpu::rows
