// IntDivider (core/int_divider.h): n / d as a multiply and a shift, exact for every divisor in
// [1, 2^31] and every n < 2^31, the arithmetic the narrow copy kernel runs on the device.
#include "core/int_divider.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace grove {
namespace {

TEST(IntDivider, EqualsIntegerDivisionOverEdgesAndRandomNumbers) {
  constexpr std::uint32_t kLargestN = (std::uint32_t{1} << 31) - 1;
  std::vector<std::uint32_t> divisors;
  for (std::uint32_t d = 1; d <= 1000; ++d) divisors.push_back(d);
  for (int k = 1; k <= 31; ++k) {
    const std::uint32_t power = std::uint32_t{1} << k;
    divisors.insert(divisors.end(), {power - 1, power});
    if (k < 31) divisors.push_back(power + 1);  // 2^31 + 1 is past the range
  }
  std::mt19937 engine(7);
  std::uniform_int_distribution<std::uint32_t> any_divisor(1, std::uint32_t{1} << 31);
  for (int i = 0; i < 200; ++i) divisors.push_back(any_divisor(engine));
  std::uniform_int_distribution<std::uint32_t> any_n(0, kLargestN);
  for (const std::uint32_t d : divisors) {
    const IntDivider divider(d);
    ASSERT_EQ(divider.divisor(), d);
    std::vector<std::uint32_t> numbers = {0, 1, kLargestN, kLargestN - 1};
    for (const std::uint32_t near : {d, 2 * d, kLargestN / d * d}) {
      if (near <= kLargestN) numbers.insert(numbers.end(), {near - 1, near});
      if (near < kLargestN) numbers.push_back(near + 1);
    }
    for (int i = 0; i < 300; ++i) numbers.push_back(any_n(engine));
    for (const std::uint32_t n : numbers) {
      ASSERT_EQ(divider.divide(n), n / d) << n << " / " << d;
    }
  }
}

}  // namespace
}  // namespace grove
