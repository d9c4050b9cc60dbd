// bfloat16 and float16: the conversions of core/reduced_float.h against exact bit patterns
// (Note [Rounding to a 16-bit float]), every 16-bit pattern round-tripped, and the tensor-level
// pieces (to(dtype), item, to_vector, printing, full).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>

#include "core/convert.h"
#include "core/reduced_float.h"
#include "core/tensor.h"

namespace grove {
namespace {

float float_bits(std::uint32_t bits) {
  return std::bit_cast<float>(bits);
}
std::uint16_t bf16(float value) {
  return BFloat16(value).bits;
}
std::uint16_t f16(float value) {
  return Float16(value).bits;
}

TEST(BFloat16Conversion, RoundsToNearestEven) {
  EXPECT_EQ(bf16(1.0f), 0x3F80);
  EXPECT_EQ(bf16(-2.0f), 0xC000);
  EXPECT_EQ(bf16(float_bits(0x3F808000)), 0x3F80);  // a tie, kept part even: down
  EXPECT_EQ(bf16(float_bits(0x3F818000)), 0x3F82);  // a tie, kept part odd: up
  EXPECT_EQ(bf16(float_bits(0x3F808001)), 0x3F81);  // just above a tie
  EXPECT_EQ(bf16(float_bits(0x3F807FFF)), 0x3F80);  // just below
  EXPECT_EQ(bf16(float_bits(0x3FFF8000)), 0x4000);  // a carry into the exponent
  EXPECT_EQ(bf16(-0.0f), 0x8000);
}

TEST(BFloat16Conversion, OverflowsToInfinityAndKeepsSubnormals) {
  EXPECT_EQ(bf16(float_bits(0x7F7F7FFF)), 0x7F7F);  // just below the largest's half unit
  EXPECT_EQ(bf16(float_bits(0x7F7F8000)), 0x7F80);  // the tie past the largest: infinity
  EXPECT_EQ(bf16(std::numeric_limits<float>::max()), 0x7F80);
  EXPECT_EQ(bf16(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(bf16(-std::numeric_limits<float>::infinity()), 0xFF80);
  EXPECT_EQ(bf16(float_bits(0x00010000)), 0x0001);  // the smallest subnormal
  EXPECT_EQ(bf16(float_bits(0x00008000)), 0x0000);  // half of it: a tie to even zero
  EXPECT_EQ(bf16(float_bits(0x00018000)), 0x0002);  // 1.5 units: a tie to even 2
  EXPECT_EQ(bf16(float_bits(0x80008001)), 0x8001);  // negative, above the tie
}

TEST(BFloat16Conversion, NaNStaysQuietNaNWithItsSign) {
  EXPECT_EQ(bf16(float_bits(0x7FC00000)), 0x7FC0);
  EXPECT_EQ(bf16(float_bits(0xFFC00000)), 0xFFC0);
  EXPECT_EQ(bf16(float_bits(0x7F800001)), 0x7FC0);  // signalling: quiet, never infinity
  EXPECT_EQ(bf16(float_bits(0x7FA00000)), 0x7FE0);  // payload's top bits kept
  EXPECT_EQ(bf16(float_bits(0x7FFFFFFF)), 0x7FFF);  // no carry out of a NaN
  EXPECT_TRUE(std::isnan(static_cast<float>(BFloat16::from_bits(0x7F81))));
}

TEST(BFloat16Conversion, Float64RoundsOnceNotTwice) {
  // 1 + 2^-8 is the tie between 0x3F80 and 0x3F81. A double just above it rounds to float32's
  // tie first under round-to-nearest; rounding to odd keeps it above.
  EXPECT_EQ(BFloat16(1.0 + 0x1p-8 + 0x1p-40).bits, 0x3F81);
  EXPECT_EQ(BFloat16(1.0 + 0x1p-8).bits, 0x3F80);
  EXPECT_EQ(BFloat16(1.0 + 0x1p-8 - 0x1p-40).bits, 0x3F80);
  EXPECT_EQ(BFloat16(1e300).bits, 0x7F80);
  EXPECT_EQ(BFloat16(-1e300).bits, 0xFF80);
  EXPECT_EQ(BFloat16(1e-300).bits, 0x0000);
  EXPECT_EQ(BFloat16(-1e-300).bits, 0x8000);
  EXPECT_TRUE(std::isnan(static_cast<float>(BFloat16(std::nan("")))));
  EXPECT_EQ(BFloat16(std::int64_t{-3}).bits, 0xC040);
  EXPECT_EQ(BFloat16(true).bits, 0x3F80);
}

TEST(Float16Conversion, RoundsToNearestEven) {
  EXPECT_EQ(f16(1.0f), 0x3C00);
  EXPECT_EQ(f16(-2.0f), 0xC000);
  EXPECT_EQ(f16(1.0f + 0x1p-11f), 0x3C00);      // a tie, kept part even: down
  EXPECT_EQ(f16(1.0f + 3 * 0x1p-11f), 0x3C02);  // a tie, kept part odd: up
  EXPECT_EQ(f16(1.0f + 0x1p-11f + 0x1p-20f), 0x3C01);
  EXPECT_EQ(f16(0.1f), 0x2E66);
  EXPECT_EQ(f16(-0.0f), 0x8000);
}

TEST(Float16Conversion, OverflowsAtHalfAUnitPastTheLargest) {
  EXPECT_EQ(f16(65504.0f), 0x7BFF);
  EXPECT_EQ(f16(65519.99f), 0x7BFF);
  EXPECT_EQ(f16(65520.0f), 0x7C00);
  EXPECT_EQ(f16(-65520.0f), 0xFC00);
  EXPECT_EQ(f16(1e10f), 0x7C00);
  EXPECT_EQ(f16(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(Float16(70000.0).bits, 0x7C00);
  EXPECT_EQ(Float16(std::int64_t{1} << 40).bits, 0x7C00);
}

TEST(Float16Conversion, Subnormals) {
  EXPECT_EQ(f16(0x1p-14f), 0x0400);                // the smallest normal
  EXPECT_EQ(f16(0x1p-14f - 0x1p-24f), 0x03FF);     // the largest subnormal
  EXPECT_EQ(f16(0x1p-14f - 0x1p-25f), 0x0400);     // a tie carried into the normals
  EXPECT_EQ(f16(0x1p-24f), 0x0001);                // the smallest subnormal
  EXPECT_EQ(f16(0x1p-25f), 0x0000);                // half of it: a tie to even zero
  EXPECT_EQ(f16(float_bits(0x33000001)), 0x0001);  // just above that tie
  EXPECT_EQ(f16(3 * 0x1p-25f), 0x0002);            // 1.5 units: a tie to even 2
  EXPECT_EQ(f16(-0x1p-24f), 0x8001);
  EXPECT_EQ(f16(1e-30f), 0x0000);
  EXPECT_EQ(f16(float_bits(0x00000001)), 0x0000);  // a float32 subnormal
  EXPECT_EQ(static_cast<float>(Float16::from_bits(0x0001)), 0x1p-24f);
  EXPECT_EQ(static_cast<float>(Float16::from_bits(0x03FF)), 0x1p-14f - 0x1p-24f);
}

TEST(Float16Conversion, NaNAndInfinities) {
  EXPECT_EQ(f16(float_bits(0x7FC00000)), 0x7E00);
  EXPECT_EQ(f16(float_bits(0xFFC00000)), 0xFE00);
  EXPECT_EQ(f16(float_bits(0x7F800001)), 0x7E00);  // signalling: quiet, never infinity
  EXPECT_EQ(f16(float_bits(0x7FA02000)), 0x7F01);  // payload's top bits kept
  const float back = static_cast<float>(Float16::from_bits(0x7D00));  // signalling
  EXPECT_TRUE(std::isnan(back));
  EXPECT_EQ(std::bit_cast<std::uint32_t>(back), 0x7FE00000u);  // quiet, payload kept
  EXPECT_EQ(static_cast<float>(Float16::from_bits(0x7C00)), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::signbit(static_cast<float>(Float16::from_bits(0x8000))));
}

// Every finite pattern widens exactly and narrows back to itself; every NaN stays NaN.
template <typename Reduced>
void expect_every_pattern_round_trips() {
  for (std::uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const auto pattern = static_cast<std::uint16_t>(bits);
    const float wide = static_cast<float>(Reduced::from_bits(pattern));
    if (std::isnan(wide)) {
      EXPECT_TRUE(std::isnan(static_cast<float>(Reduced(wide)))) << bits;
      continue;
    }
    ASSERT_EQ(Reduced(wide).bits, pattern) << bits;
    ASSERT_EQ(Reduced(static_cast<double>(wide)).bits, pattern) << bits;
  }
}

TEST(ReducedFloatConversion, EveryPatternRoundTrips) {
  expect_every_pattern_round_trips<BFloat16>();
  expect_every_pattern_round_trips<Float16>();
}

// Narrowing picks the nearest value: checked for a spread of float32 inputs against the two
// representable neighbours, in double.
template <typename Reduced>
void expect_nearest() {
  std::uint32_t state = 12345;
  for (int i = 0; i < 200000; ++i) {
    state = state * 1664525u + 1013904223u;
    const float value = float_bits(state);
    if (!std::isfinite(value)) continue;
    const Reduced narrow(value);
    const double got = static_cast<float>(narrow);
    if (std::isinf(got)) continue;  // checked by the overflow tests
    const double error = std::fabs(got - static_cast<double>(value));
    for (const int step : {-1, 1}) {
      const auto neighbour_bits = static_cast<std::uint16_t>(narrow.bits + step);
      const double neighbour = static_cast<float>(Reduced::from_bits(neighbour_bits));
      if (std::isnan(neighbour) || std::isinf(neighbour)) continue;
      if ((neighbour_bits & 0x7FFF) == 0x7FFF || (narrow.bits & 0x7FFF) == 0 ||
          ((narrow.bits ^ neighbour_bits) & 0x8000)) {
        continue;  // stepped across zero's sign or off the end of the patterns
      }
      ASSERT_LE(error, std::fabs(neighbour - static_cast<double>(value))) << std::hex << state;
    }
  }
}

TEST(ReducedFloatConversion, NarrowingPicksTheNearestValue) {
  expect_nearest<BFloat16>();
  expect_nearest<Float16>();
}

TEST(ReducedFloatConversion, ToIntegersAndBoolFollowTheFloat32Rule) {
  EXPECT_EQ(convert_element<std::int64_t>(BFloat16(-3.75f)), -3);
  EXPECT_EQ(convert_element<std::int32_t>(Float16(70000.0f)), 2147483647);  // +inf saturates
  EXPECT_EQ(convert_element<std::int32_t>(BFloat16(std::nanf(""))), 0);
  EXPECT_EQ(convert_element<std::int64_t>(BFloat16(-1e30f)),
            std::numeric_limits<std::int64_t>::lowest());
  EXPECT_FALSE(convert_element<bool>(Float16(-0.0f)));
  EXPECT_TRUE(convert_element<bool>(BFloat16(std::nanf(""))));
  EXPECT_EQ(convert_element<Float16>(BFloat16(1.5f)).bits, 0x3E00);
  EXPECT_EQ(convert_element<BFloat16>(Float16::from_bits(0x0001)).bits, 0x3380);  // 2^-24
}

TEST(ReducedFloatTensor, ConvertsToAndFromEveryDType) {
  const Tensor x = from_vector(std::vector<float>{1.0f, -2.5f, 0.1f, 65520.0f, 3.0f});
  for (const DType reduced : {DType::BFloat16, DType::Float16}) {
    const Tensor narrow = x.to(reduced);
    EXPECT_EQ(narrow.dtype(), reduced);
    EXPECT_EQ(narrow.nbytes(), 10u);
    const std::vector<float> back = narrow.to_vector<float>();
    EXPECT_EQ(back[0], 1.0f);
    EXPECT_EQ(back[1], -2.5f);
    EXPECT_EQ(back[2], reduced == DType::BFloat16 ? static_cast<float>(BFloat16(0.1f))
                                                  : static_cast<float>(Float16(0.1f)));
    EXPECT_EQ(std::isinf(back[3]), reduced == DType::Float16);
    EXPECT_EQ(narrow.to(DType::Int64).to_vector<std::int64_t>()[1], -2);
    EXPECT_EQ(narrow.to(DType::Float64).to_vector<double>()[4], 3.0);
    EXPECT_EQ(narrow.to(DType::Bool).to_vector<bool>()[0], true);
    EXPECT_EQ(from_vector(std::vector<std::int64_t>{7}).to(reduced).item<float>(), 7.0f);
    EXPECT_EQ(narrow.slice(0, 1, 2).item<double>(), -2.5);
    EXPECT_EQ(narrow.slice(0, 4, 5).item<std::int32_t>(), 3);
  }
  EXPECT_EQ(x.to(DType::BFloat16).to(DType::Float16).to_vector<float>()[1], -2.5f);
  const std::vector<BFloat16> raw = x.to_vector<BFloat16>();
  EXPECT_EQ(raw[0].bits, 0x3F80);
  EXPECT_EQ(from_vector(raw).dtype(), DType::BFloat16);
  EXPECT_EQ(x.slice(0, 0, 1).item<Float16>().bits, 0x3C00);
}

TEST(ReducedFloatTensor, ItemRefusesAnIntegerItCannotHold) {
  const Tensor inf = full({}, std::numeric_limits<double>::infinity(), DType::Float16);
  EXPECT_THROW(
      {
        try {
          (void)inf.item<std::int64_t>();
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("float16"), std::string::npos) << e.what();
          throw;
        }
      },
      Error);
}

TEST(ReducedFloatTensor, FullRefusesAFiniteValueThatWouldBeInfinite) {
  EXPECT_EQ(full({2}, 65504.0, DType::Float16).to_vector<float>()[1], 65504.0f);
  EXPECT_THROW(
      {
        try {
          (void)full({2}, 70000.0, DType::Float16);
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("65520"), std::string::npos) << e.what();
          throw;
        }
      },
      Error);
  EXPECT_THROW((void)full({2}, 1e39, DType::BFloat16), Error);
  EXPECT_THROW((void)full({2}, 1e39, DType::Float32), Error);
  EXPECT_NO_THROW((void)full({2}, 1e39, DType::Float64));
  EXPECT_TRUE(std::isinf(
      full({1}, -std::numeric_limits<double>::infinity(), DType::BFloat16).item<float>()));
}

TEST(ReducedFloatTensor, PrintsItsDTypeAndValues) {
  std::ostringstream out;
  out << from_vector(std::vector<float>{0.5f, -1.0f}).to(DType::BFloat16);
  EXPECT_EQ(out.str(), "tensor([0.5000, -1.0000], dtype=bfloat16, device=cpu)");
  EXPECT_EQ(dtype_name(DType::Float16), "float16");
  EXPECT_EQ(element_size(DType::BFloat16), 2u);
  EXPECT_TRUE(is_floating_point(DType::Float16));
  EXPECT_TRUE(is_reduced_float(DType::BFloat16));
  EXPECT_FALSE(is_reduced_float(DType::Float32));
}

}  // namespace
}  // namespace grove
