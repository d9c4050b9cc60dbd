// max_pool2d and avg_pool2d against direct loops in double: kernel, stride and padding
// combinations, 3-d and 4-d inputs, non-contiguous inputs, ties (the first index wins), padding
// that must never win a max, NaN, sizes that take the threaded path; and every error path.
#include "ops/pool.h"

#include "op_test_util.h"

namespace grove::ops {
namespace {

using testing::elements;
using testing::error_of;
using testing::expect_close;
using ::testing::HasSubstr;
using testing::random_tensor;
using testing::relative_tolerance;

struct Window {
  std::int64_t kernel_h, kernel_w, stride_h, stride_w, padding_h, padding_w;
};

struct Reference {
  std::vector<double> max_values, indices, averages;
};

// Every plane of an (..., H, W) input: the max (first maximum in row-major order wins, padding
// never does), its index y * W + x, and the mean over kH * kW with padding counted as 0.
Reference reference_pool(const Tensor& input, const Window& w, std::int64_t out_h,
                         std::int64_t out_w) {
  const std::int64_t height = input.size(-2), width = input.size(-1);
  const std::int64_t planes = input.numel() / std::max<std::int64_t>(height * width, 1);
  const std::vector<double> in = elements(input);
  Reference result;
  for (std::int64_t p = 0; p < planes; ++p) {
    for (std::int64_t oy = 0; oy < out_h; ++oy) {
      for (std::int64_t ox = 0; ox < out_w; ++ox) {
        double best = -INFINITY, sum = 0.0;
        std::int64_t best_index = -1;
        for (std::int64_t i = 0; i < w.kernel_h; ++i) {
          for (std::int64_t j = 0; j < w.kernel_w; ++j) {
            const std::int64_t y = oy * w.stride_h - w.padding_h + i;
            const std::int64_t x = ox * w.stride_w - w.padding_w + j;
            if (y < 0 || y >= height || x < 0 || x >= width) continue;
            const double value = in[(p * height + y) * width + x];
            sum += value;
            if (best_index < 0 || value > best || std::isnan(value)) {
              best = value;
              best_index = y * width + x;
            }
          }
        }
        result.max_values.push_back(best);
        result.indices.push_back(static_cast<double>(best_index));
        result.averages.push_back(sum / static_cast<double>(w.kernel_h * w.kernel_w));
      }
    }
  }
  return result;
}

enum class Values { Random, Ties, Negative };

struct PoolCase {
  const char* name;
  DimVector sizes;
  Window window;
  Values values = Values::Random;
  bool transposed = false;  // the input's plane stored transposed (non-contiguous)
};

// Test names and failure messages show the case by name.
void PrintTo(const PoolCase& c, std::ostream* out) {
  *out << c.name;
}

// clang-format off
const PoolCase kPoolCases[] = {
    // name                  sizes            kH kW sH sW pH pW
    {"kernel_2",             {2, 3, 8, 8},   {2, 2, 2, 2, 0, 0}},
    {"odd_size_floor",       {2, 3, 7, 9},   {2, 2, 2, 2, 0, 0}},
    {"kernel_3_stride_2_pad",{2, 2, 9, 8},   {3, 3, 2, 2, 1, 1}},
    {"asymmetric",           {1, 2, 7, 6},   {3, 2, 1, 2, 1, 0}},
    {"overlapping_stride_1", {1, 2, 5, 5},   {3, 3, 1, 1, 1, 1}},
    {"kernel_1",             {1, 2, 4, 3},   {1, 1, 1, 1, 0, 0}},
    {"kernel_is_input",      {2, 2, 5, 4},   {5, 4, 5, 4, 0, 0}},
    {"unbatched_3d",         {3, 6, 6},      {2, 2, 2, 2, 0, 0}},
    {"transposed_input",     {2, 3, 6, 7},   {3, 3, 2, 2, 1, 1}, Values::Random, true},
    {"ties_first_wins",      {2, 2, 8, 8},   {3, 3, 1, 1, 1, 1}, Values::Ties},
    {"ties_kernel_2",        {2, 2, 8, 9},   {2, 2, 2, 2, 0, 0}, Values::Ties},
    {"negative_with_padding",{1, 2, 5, 5},   {2, 2, 2, 2, 1, 1}, Values::Negative},
    {"batch_0",              {0, 3, 4, 4},   {2, 2, 2, 2, 0, 0}},
    // Above the threading threshold.
    {"cnn_pool_threaded",    {8, 32, 28, 28}, {2, 2, 2, 2, 0, 0}},
};
// clang-format on

class PoolTest : public ::testing::TestWithParam<std::tuple<PoolCase, DType>> {};

TEST_P(PoolTest, MaxPool2dAndAvgPool2dMatchDirectLoops) {
  const auto& [c, dtype] = GetParam();
  const Window& w = c.window;
  Tensor input;
  switch (c.values) {
    case Values::Random:
      input = random_tensor(c.sizes, dtype, -2, 2, 1);
      break;
    // Integers 0..2: most windows hold several equal maxima.
    case Values::Ties:
      input = testing::random_integers(c.sizes, 0, 3, 2).to(dtype);
      break;
    case Values::Negative:
      input = random_tensor(c.sizes, dtype, -5, -1, 3);
      break;
  }
  if (c.transposed) {
    input = input.transpose(-2, -1).contiguous().transpose(-2, -1);
    ASSERT_FALSE(input.is_contiguous());
  }
  const std::int64_t out_h = (input.size(-2) + 2 * w.padding_h - w.kernel_h) / w.stride_h + 1;
  const std::int64_t out_w = (input.size(-1) + 2 * w.padding_w - w.kernel_w) / w.stride_w + 1;
  DimVector sizes(input.sizes());
  sizes[sizes.size() - 2] = out_h;
  sizes[sizes.size() - 1] = out_w;
  const Reference expected = reference_pool(input, w, out_h, out_w);

  const auto [values, indices] = max_pool2d_with_indices(
      input, {w.kernel_h, w.kernel_w}, {w.stride_h, w.stride_w}, {w.padding_h, w.padding_w});
  EXPECT_EQ(values.sizes(), IntArrayRef(sizes));
  EXPECT_EQ(indices.sizes(), IntArrayRef(sizes));
  EXPECT_EQ(values.dtype(), dtype);
  EXPECT_EQ(indices.dtype(), DType::Int64);
  // A max selects an element: values and indices must be exact.
  EXPECT_EQ(elements(values), expected.max_values) << c.name;
  EXPECT_EQ(elements(indices), expected.indices) << c.name;
  EXPECT_EQ(elements(max_pool2d(input, {w.kernel_h, w.kernel_w}, {w.stride_h, w.stride_w},
                                {w.padding_h, w.padding_w})),
            expected.max_values);

  const Tensor averages = avg_pool2d(input, {w.kernel_h, w.kernel_w}, {w.stride_h, w.stride_w},
                                     {w.padding_h, w.padding_w});
  EXPECT_EQ(averages.sizes(), IntArrayRef(sizes));
  // The kernel sums in double like the reference (possibly in another order) and rounds once
  // to the dtype, so the dtype's relative tolerance holds for every element; the floor covers a
  // mean of exactly cancelling values.
  expect_close(averages, expected.averages, relative_tolerance(dtype),
               relative_tolerance(dtype) * 1e-6, c.name);
}

INSTANTIATE_TEST_SUITE_P(Ops, PoolTest,
                         ::testing::Combine(::testing::ValuesIn(kPoolCases),
                                            ::testing::Values(DType::Float32, DType::Float64)),
                         testing::CaseAndDtypeName());

TEST(MaxPool2d, StrideDefaultsToTheKernel) {
  const Tensor input = random_tensor({1, 1, 6, 6}, DType::Float32, -1, 1, 4);
  EXPECT_EQ(max_pool2d(input, {2}).to_vector<float>(),
            max_pool2d(input, {2, 2}, {2, 2}).to_vector<float>());
  EXPECT_EQ(avg_pool2d(input, {3}).sizes(), IntArrayRef({1, 1, 2, 2}));
}

TEST(MaxPool2d, TiesPickTheFirstIndexInTheWindow) {
  const Tensor input = full({1, 1, 4, 4}, 1.0f);
  const auto [values, indices] = max_pool2d_with_indices(input, {2});
  EXPECT_EQ(values.to_vector<float>(), std::vector<float>(4, 1.0f));
  EXPECT_EQ(indices.to_vector<std::int64_t>(), (std::vector<std::int64_t>{0, 2, 8, 10}));
}

TEST(MaxPool2d, NanWinsLikePyTorch) {
  const Tensor input = from_vector<float>({1.0f, NAN, 3.0f, 2.0f}, {1, 1, 2, 2});
  const auto [values, indices] = max_pool2d_with_indices(input, {2});
  EXPECT_TRUE(std::isnan(values.to_vector<float>()[0]));
  EXPECT_EQ(indices.to_vector<std::int64_t>()[0], 1);
}

// NaN, infinities and ties by PyTorch's rules, for 2x2 windows at stride 2 (the cnn's) and 3x3
// windows with padding, over contiguous and transposed inputs: a NaN always takes the place (the
// last NaN of a window wins), a window of -inf keeps its first element, and the first of equal
// maxima wins.
TEST(MaxPool2d, NanInfinitiesAndTiesFollowOneRuleOnEveryPath) {
  std::vector<float> data(2 * 3 * 8 * 9);
  for (std::size_t i = 0; i < data.size(); ++i) {
    switch (i % 11) {
      case 0:
        data[i] = NAN;
        break;
      case 3:
      case 4:
        data[i] = -INFINITY;
        break;
      case 7:
        data[i] = INFINITY;
        break;
      default:
        data[i] = static_cast<float>((i * 7) % 3);  // ties
    }
  }
  // Windows of -inf only, and of two NaNs.
  for (std::size_t i : {0u, 1u, 9u, 10u}) data[72 + i] = -INFINITY;
  data[144] = NAN;
  data[153] = NAN;
  const Tensor contiguous = from_vector<float>(data, {2, 3, 8, 9});
  const Tensor transposed = contiguous.transpose(-2, -1).contiguous().transpose(-2, -1);
  const Window windows[] = {{2, 2, 2, 2, 0, 0}, {3, 3, 2, 2, 1, 1}};
  // Contiguous 2x2 windows take the vectorised row loop (float32 and float64); transposed
  // inputs and 3x3 windows the general one.
  for (const Tensor& input : {contiguous, transposed, contiguous.to(DType::Float64)}) {
    for (const Window& w : windows) {
      const std::int64_t out_h = (8 + 2 * w.padding_h - w.kernel_h) / w.stride_h + 1;
      const std::int64_t out_w = (9 + 2 * w.padding_w - w.kernel_w) / w.stride_w + 1;
      const Reference expected = reference_pool(input, w, out_h, out_w);
      const auto [values, indices] = max_pool2d_with_indices(
          input, {w.kernel_h, w.kernel_w}, {w.stride_h, w.stride_w}, {w.padding_h, w.padding_w});
      const std::string where = "kernel " + std::to_string(w.kernel_h) +
                                (input.is_contiguous() ? ", contiguous " : ", transposed ") +
                                std::string(dtype_name(input.dtype()));
      EXPECT_EQ(elements(indices), expected.indices) << where;
      const std::vector<double> got = elements(values);
      ASSERT_EQ(got.size(), expected.max_values.size()) << where;
      for (std::size_t i = 0; i < got.size(); ++i) {
        const double want = expected.max_values[i];
        EXPECT_TRUE(std::isnan(want) ? std::isnan(got[i]) : got[i] == want)
            << where << ": output " << i << " is " << got[i] << ", expected " << want;
      }
    }
  }
}

TEST(MaxPool2d, ErrorsNameTheOpAndShapes) {
  const Tensor input = zeros({1, 2, 6, 6});
  std::string message = error_of([&] { max_pool2d(input, {3}, {}, {2}); });
  EXPECT_THAT(message, HasSubstr("max_pool2d: expected paddings between 0 and half the kernel "
                                 "(3, 3), but got (2, 2)"));
  EXPECT_THAT(message, HasSubstr("(inputs: float32[1, 2, 6, 6])"));
  EXPECT_THAT(error_of([&] { max_pool2d(input, {2}, {}, {-1}); }),
              HasSubstr("max_pool2d: expected paddings between 0 and half the kernel"));
  EXPECT_THAT(error_of([&] {
                max_pool2d(zeros({6, 6}), {2});
              }),
              HasSubstr("max_pool2d: expected a 3-d (C, H, W) or 4-d (N, C, H, W) input, but "
                        "got 2-d"));
  EXPECT_THAT(error_of([&] {
                max_pool2d(input, {0, 2});
              }),
              HasSubstr("max_pool2d: expected a kernel size >= 1, but got (0, 2)"));
  EXPECT_THAT(error_of([&] {
                max_pool2d(input, {2}, {2, 0});
              }),
              HasSubstr("max_pool2d: expected strides >= 1, but got (2, 0)"));
  EXPECT_THAT(error_of([&] { max_pool2d(input, {7}); }),
              HasSubstr("max_pool2d: the kernel (7, 7) is larger than the padded input (6, 6)"));
  EXPECT_THAT(error_of([&] {
                max_pool2d(input, {2, 2, 2});
              }),
              HasSubstr("max_pool2d: expected the kernel size as one value or two (height, "
                        "width), but got [2, 2, 2]"));
  EXPECT_THAT(error_of([&] { max_pool2d(input, {}); }),
              HasSubstr("max_pool2d: expected the kernel size as one value or two"));
  EXPECT_THAT(error_of([&] {
                max_pool2d(input, {2}, {1, 1, 1});
              }),
              HasSubstr("max_pool2d: expected the stride as one value or two"));
  EXPECT_THAT(error_of([&] {
                max_pool2d_with_indices(input, {2}, {}, {0, 0, 0});
              }),
              HasSubstr("max_pool2d: expected the padding as one value or two"));
  EXPECT_THAT(error_of([] {
                max_pool2d(zeros({1, 1, 4, 4}, DType::Int64), {2});
              }),
              HasSubstr("max_pool2d: expected a float32 or float64 input, but got int64"));
}

TEST(AvgPool2d, ErrorsNameTheOp) {
  EXPECT_THAT(error_of([] {
                avg_pool2d(zeros({1, 2, 6, 6}), {2}, {}, {2});
              }),
              HasSubstr("avg_pool2d: expected paddings between 0 and half the kernel (2, 2), "
                        "but got (2, 2)"));
  EXPECT_THAT(error_of([] {
                avg_pool2d(zeros({1, 2, 3, 3}), {4});
              }),
              HasSubstr("avg_pool2d: the kernel (4, 4) is larger than the padded input (3, 3)"));
  EXPECT_THAT(error_of([] {
                avg_pool2d(zeros({2, 3}), {2});
              }),
              HasSubstr("avg_pool2d: expected a 3-d (C, H, W) or 4-d (N, C, H, W) input"));
  EXPECT_THAT(error_of([] {
                avg_pool2d(zeros({1, 1, 4, 4}, DType::Int32), {2});
              }),
              HasSubstr("avg_pool2d: expected a float32 or float64 input, but got int32"));
  EXPECT_THAT(error_of([] {
                avg_pool2d(zeros({1, 1, 4, 4}), {2}, {0});
              }),
              HasSubstr("avg_pool2d: expected strides >= 1, but got (0, 0)"));
}

TEST(AvgPool2d, PaddingCountsAsZeroInTheDivisor) {
  const Tensor input = full({1, 1, 2, 2}, 4.0);
  // Kernel 2, stride 2, padding 1: each 2x2 window holds one input element and three zeros.
  EXPECT_EQ(avg_pool2d(input, {2}, {2}, {1}).to_vector<double>(),
            (std::vector<double>{1.0, 1.0, 1.0, 1.0}));
}

}  // namespace
}  // namespace grove::ops
