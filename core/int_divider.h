// Division of 32-bit unsigned integers by a divisor fixed before a kernel runs, as a multiply and
// a shift (Granlund and Montgomery, "Division by invariant integers using multiplication"):
// a strided kernel turns every element's linear index into coordinates with one division per
// dimension, and a 64-bit division is a long software routine on a GPU (the copies that pack
// attention heads spent most of their time in it). Compiled for host and device, so the CPU
// tests check the same arithmetic the kernels run.
//
// Invariant: divide(n) is exact for every divisor in [1, 2^31] and every n < 2^31. The sum
// high(n * multiplier) + n must not overflow 32 bits, and for n < 2^31 it cannot.
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define GROVE_DIVIDER_HOST_DEVICE __host__ __device__
#else
#define GROVE_DIVIDER_HOST_DEVICE
#endif

namespace grove {

class IntDivider {
 public:
  IntDivider() = default;
  // `divisor` in [1, 2^31].
  explicit IntDivider(std::uint32_t divisor) : divisor_(divisor) {
    // shift: the smallest s with 2^s >= divisor; then multiplier = floor(2^32 (2^s - d) / d) + 1,
    // which is below 2^32 because d > 2^(s - 1).
    while ((std::uint64_t{1} << shift_) < divisor) ++shift_;
    const std::uint64_t numerator = (std::uint64_t{1} << 32) * ((std::uint64_t{1} << shift_) - divisor);
    multiplier_ = static_cast<std::uint32_t>(numerator / divisor + 1);
  }

  GROVE_DIVIDER_HOST_DEVICE std::uint32_t divisor() const { return divisor_; }

  // n / divisor, for n < 2^31.
  GROVE_DIVIDER_HOST_DEVICE std::uint32_t divide(std::uint32_t n) const {
#ifdef __CUDA_ARCH__
    const std::uint32_t high = __umulhi(n, multiplier_);
#else
    const auto high = static_cast<std::uint32_t>((std::uint64_t{n} * multiplier_) >> 32);
#endif
    return (high + n) >> shift_;
  }

 private:
  std::uint32_t divisor_ = 1;
  std::uint32_t multiplier_ = 1;
  std::uint32_t shift_ = 0;
};

}  // namespace grove
