// Edge cases found in review: exact results at inf, -inf and denormals in every position of a
// run, in-place writes into self-overlapping views, integer range rules (clamp, scalars,
// wrap-around), sizes too large to allocate, and degenerate conv/pool/uniform arguments.
#include <cmath>
#include <limits>

#include "op_test_util.h"
#include "ops/conv.h"
#include "ops/elementwise.h"
#include "ops/inplace.h"
#include "ops/pool.h"
#include "ops/random.h"
#include "ops/shape.h"

namespace grove::ops {
namespace {

using testing::error_of;
using ::testing::HasSubstr;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kDenormal = 1e-45f;

// The same special value at every position of a 17-element run, so that both the body and the
// tail of any vectorised loop see it.
std::vector<float> unary_at_every_position(Tensor (*op)(const Tensor&), float value) {
  std::vector<float> results;
  for (int position = 0; position < 17; ++position) {
    std::vector<float> input(17, 1.0f);
    input[static_cast<std::size_t>(position)] = value;
    results.push_back(
        op(from_vector(input)).to_vector<float>()[static_cast<std::size_t>(position)]);
  }
  return results;
}

TEST(EdgeCases, UnaryMathIsExactAtInfinityAndDenormalsInEveryPosition) {
  for (float r : unary_at_every_position(sqrt, kInf)) EXPECT_EQ(r, kInf);
  for (float r : unary_at_every_position(exp, -kInf)) EXPECT_EQ(r, 0.0f);
  for (float r : unary_at_every_position(exp, -100.0f)) EXPECT_EQ(r, std::exp(-100.0f));
  for (float r : unary_at_every_position(sigmoid, -kInf)) EXPECT_EQ(r, 0.0f);
  for (float r : unary_at_every_position(log, kDenormal)) EXPECT_FLOAT_EQ(r, std::log(kDenormal));
  for (float r : unary_at_every_position(sqrt, kDenormal)) EXPECT_FLOAT_EQ(r, std::sqrt(kDenormal));
}

TEST(EdgeCases, InPlaceWritesIntoASelfOverlappingViewAreRefused) {
  Tensor base = arange(5);
  Tensor folded = base.as_strided({3, 3}, {1, 1}, 0);  // rows overlap
  EXPECT_THAT(error_of([&] {
                add_(folded, ones({3, 3}));
              }),
              HasSubstr("add_: cannot write in place into a tensor whose elements share memory"));
  EXPECT_THAT(error_of([&] {
                folded.copy_(zeros({3, 3}));
              }),
              HasSubstr("copy_: the destination of shape [3, 3] and strides [1, 1] has elements "
                        "that share memory locations"));
  EXPECT_EQ(base.to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4}));  // untouched
  // Non-overlapping strided views stay writable.
  add_(base.slice(0, 0, 5, 2), ones({3}));
  EXPECT_EQ(base.to_vector<float>(), (std::vector<float>{1, 1, 3, 3, 5}));
}

TEST(EdgeCases, IntegerClampStaysInTheIntegerType) {
  const std::int64_t big = std::numeric_limits<std::int64_t>::max();
  Tensor x = from_vector(std::vector<std::int64_t>{big, (1LL << 53) + 1, -5});
  EXPECT_EQ(clamp(x, -kInf, kInf).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{big, (1LL << 53) + 1, -5}));
  EXPECT_EQ(clamp(x, 0, 10).to_vector<std::int64_t>(), (std::vector<std::int64_t>{10, 10, 0}));
  EXPECT_THAT(error_of([&] { clamp(x, 0.5, 2.5); }),
              HasSubstr("clamp: bound 0.5 is not an integer that fits a int64 tensor"));
}

TEST(EdgeCases, ScalarsThatDoNotFitTheDtypeAreErrors) {
  Tensor small = from_vector(std::vector<std::int32_t>{0, 1});
  EXPECT_THAT(error_of([&] { eq(small, std::int64_t{1} << 32); }),
              HasSubstr("eq: the scalar 4294967296 does not fit a int32 tensor"));
  EXPECT_THAT(error_of([&] { eq(from_vector(std::vector<bool>{true}), 2); }),
              HasSubstr("does not fit a bool tensor"));
  EXPECT_THAT(error_of([&] { add_(small, small, std::int64_t{1} << 40); }),
              HasSubstr("does not fit a int32 tensor"));
}

TEST(EdgeCases, IntegerArithmeticWrapsAround) {
  const std::int64_t big = std::numeric_limits<std::int64_t>::max();
  Tensor x = from_vector(std::vector<std::int64_t>{big});
  EXPECT_EQ(add(x, 1).item<std::int64_t>(), std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(neg(add(x, 1)).item<std::int64_t>(), std::numeric_limits<std::int64_t>::min());
}

TEST(EdgeCases, SizesTooLargeToAllocateAreErrors) {
  Tensor indices = from_vector(std::vector<std::int64_t>{0, 1, 2, 3});
  EXPECT_THAT(error_of([&] { one_hot(indices, std::int64_t{1} << 62); }),
              HasSubstr("describe more elements than any device can hold"));
  EXPECT_THAT(error_of([] {
                rand({std::int64_t{1} << 32, std::int64_t{1} << 32});
              }),
              HasSubstr("describe more elements than any device can hold"));
}

TEST(EdgeCases, DegenerateConvPoolAndUniformArgumentsAreErrors) {
  EXPECT_THAT(error_of([] {
                conv2d(ones({1, 1, 3, 3}), ones({1, 1, 0, 0}));
              }),
              HasSubstr("conv2d: expected a kernel of at least 1 x 1"));
  EXPECT_THAT(error_of([] {
                max_pool2d(ones({1, 1, 0, 0}), {2}, {2}, {1});
              }),
              HasSubstr("expected a non-empty input plane"));
  Tensor x = zeros({4}, DType::Float64);
  EXPECT_THAT(error_of([&] { uniform_(x, -1.7e308, 1.7e308); }),
              HasSubstr("is wider than a double can hold"));
}

}  // namespace
}  // namespace grove::ops
