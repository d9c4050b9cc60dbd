// conv2d_backward_input and conv2d_backward_weight against direct loops in double (the adjoint of
// the direct convolution in conv_test.cpp): strides, paddings, dilations, groups (depthwise too),
// the 1x1 path without im2col, input sizes that a stride leaves partly unread, non-contiguous
// grad and operands, size-0 batch, sizes that take the threaded paths; both by central
// differences against conv2d in float64; and the error paths.
#include "op_test_util.h"
#include "ops/conv.h"

namespace grove::ops {
namespace {

using testing::elements;
using testing::error_of;
using testing::expect_close;
using testing::expect_gradient;
using ::testing::HasSubstr;
using testing::non_contiguous;
using testing::random_tensor;
using testing::relative_tolerance;

struct Geometry {
  std::int64_t stride_h, stride_w, padding_h, padding_w, dilation_h, dilation_w, groups;
};

struct Gradients {
  std::vector<double> input, weight;
};

// For out[n][o][y][x] = sum over c, i, j of input[n][g C/G + c][iy][ix] * weight[o][c][i][j]
// (iy = y sH - pH + i dH, ix = x sW - pW + j dW inside the plane), every term adds
// grad[n][o][y][x] * weight[o][c][i][j] to the input's gradient at [n][g C/G + c][iy][ix] and
// grad[n][o][y][x] * input[...] to the weight's gradient at [o][c][i][j].
Gradients reference_gradients(const Tensor& grad, const Tensor& input, const Tensor& weight,
                              const Geometry& g) {
  const std::int64_t batch = input.size(0), channels = input.size(1), height = input.size(2),
                     width = input.size(3);
  const std::int64_t out_channels = weight.size(0), group_channels = weight.size(1),
                     kernel_h = weight.size(2), kernel_w = weight.size(3);
  const std::int64_t out_h = grad.size(2), out_w = grad.size(3);
  const std::vector<double> gr = elements(grad), in = elements(input), w = elements(weight);
  Gradients result{std::vector<double>(in.size(), 0.0), std::vector<double>(w.size(), 0.0)};
  for (std::int64_t n = 0; n < batch; ++n) {
    for (std::int64_t o = 0; o < out_channels; ++o) {
      const std::int64_t group = o / (out_channels / g.groups);
      for (std::int64_t y = 0; y < out_h; ++y) {
        for (std::int64_t x = 0; x < out_w; ++x) {
          const double dy =
              gr[static_cast<std::size_t>(((n * out_channels + o) * out_h + y) * out_w + x)];
          for (std::int64_t c = 0; c < group_channels; ++c) {
            for (std::int64_t i = 0; i < kernel_h; ++i) {
              for (std::int64_t j = 0; j < kernel_w; ++j) {
                const std::int64_t iy = y * g.stride_h - g.padding_h + i * g.dilation_h;
                const std::int64_t ix = x * g.stride_w - g.padding_w + j * g.dilation_w;
                if (iy < 0 || iy >= height || ix < 0 || ix >= width) continue;
                const auto in_index = static_cast<std::size_t>(
                    ((n * channels + group * group_channels + c) * height + iy) * width + ix);
                const auto w_index = static_cast<std::size_t>(
                    ((o * group_channels + c) * kernel_h + i) * kernel_w + j);
                result.input[in_index] += dy * w[w_index];
                result.weight[w_index] += dy * in[in_index];
              }
            }
          }
        }
      }
    }
  }
  return result;
}

enum class Layout { Contiguous, Strided };

struct ConvBackwardCase {
  const char* name;
  std::int64_t batch, channels, height, width, out_channels, kernel_h, kernel_w;
  Geometry geometry;
  Layout layout = Layout::Contiguous;
  bool finite_differences = true;  // small enough to check by central differences
};

void PrintTo(const ConvBackwardCase& c, std::ostream* out) {
  *out << c.name;
}

constexpr Layout kDense = Layout::Contiguous;
constexpr bool kLarge = false;  // no central differences

// clang-format off
const ConvBackwardCase kCases[] = {
    // name                  N  C  H   W   O  kH kW  sH sW pH pW dH dW G
    {"basic",                2, 3, 6,  7,  4, 3, 3, {1, 1, 0, 0, 1, 1, 1}},
    {"padding_1",            2, 2, 5,  5,  3, 3, 3, {1, 1, 1, 1, 1, 1, 1}},
    {"stride_2_unread_rows", 2, 2, 8,  7,  3, 3, 3, {2, 2, 0, 0, 1, 1, 1}},  // row 7, column 6
    {"stride_2_padding_1",   1, 3, 7,  6,  2, 3, 3, {2, 2, 1, 1, 1, 1, 1}},
    {"asymmetric",           1, 2, 7,  9,  3, 3, 2, {2, 1, 0, 2, 1, 1, 1}},
    {"dilation_2",           2, 2, 7,  7,  2, 3, 3, {1, 1, 2, 2, 2, 2, 1}},
    {"stride_3_dilation",    1, 2, 11, 10, 2, 2, 3, {3, 3, 1, 0, 2, 1, 1}},
    {"one_by_one_direct",    2, 4, 3,  5,  3, 1, 1, {1, 1, 0, 0, 1, 1, 1}},
    {"one_by_one_stride",    2, 3, 5,  4,  2, 1, 1, {2, 2, 0, 0, 1, 1, 1}},
    {"groups_2",             2, 4, 5,  5,  6, 3, 3, {1, 1, 1, 1, 1, 1, 2}},
    {"depthwise",            1, 3, 5,  4,  6, 3, 3, {1, 1, 1, 1, 1, 1, 3}},
    {"grouped_1x1",          2, 4, 3,  3,  2, 1, 1, {1, 1, 0, 0, 1, 1, 2}},
    {"strided_operands",     2, 3, 6,  5,  4, 3, 3, {1, 2, 1, 0, 1, 1, 1}, Layout::Strided},
    {"strided_groups",       2, 4, 5,  5,  4, 3, 3, {2, 1, 1, 1, 1, 1, 2}, Layout::Strided},
    {"batch_0",              0, 3, 6,  6,  4, 3, 3, {1, 1, 1, 1, 1, 1, 1}},
    // More than kWeightChunks images: chunks of two images and of one.
    {"many_images",          19, 2, 4, 4,  2, 3, 3, {1, 1, 1, 1, 1, 1, 1}, kDense, kLarge},
    {"many_images_strided",  37, 3, 9, 8,  4, 3, 3, {2, 2, 1, 1, 1, 1, 1}, kDense, kLarge},
    {"many_images_dilated",  21, 2, 9, 9,  3, 3, 3, {1, 1, 2, 1, 2, 1, 1}, kDense, kLarge},
    // Above kMinParallelWork: images (or chunks) over threads, then one image with Eigen's threads.
    {"threaded",             4, 32, 14, 14, 64, 3, 3, {1, 1, 1, 1, 1, 1, 1}, kDense, kLarge},
    {"one_image_threaded",   1, 32, 14, 14, 64, 3, 3, {1, 1, 1, 1, 1, 1, 1}, kDense, kLarge},
};
// clang-format on

struct Operands {
  Tensor input, weight, grad;
};

// Random input and weight of the case, and a random grad of conv2d's output shape.
Operands make_operands(const ConvBackwardCase& c, DType dtype) {
  const Geometry& g = c.geometry;
  const std::int64_t out_h =
      (c.height + 2 * g.padding_h - g.dilation_h * (c.kernel_h - 1) - 1) / g.stride_h + 1;
  const std::int64_t out_w =
      (c.width + 2 * g.padding_w - g.dilation_w * (c.kernel_w - 1) - 1) / g.stride_w + 1;
  Operands operands{random_tensor({c.batch, c.channels, c.height, c.width}, dtype, -2, 2, 1),
                    random_tensor({c.out_channels, c.channels / g.groups, c.kernel_h, c.kernel_w},
                                  dtype, -2, 2, 2),
                    random_tensor({c.batch, c.out_channels, out_h, out_w}, dtype, -2, 2, 3)};
  if (c.layout == Layout::Strided) {
    operands.input = operands.input.transpose(2, 3).contiguous().transpose(2, 3);
    operands.weight = non_contiguous(operands.weight);
    operands.grad = non_contiguous(operands.grad);
  }
  return operands;
}

class ConvBackwardTest : public ::testing::TestWithParam<std::tuple<ConvBackwardCase, DType>> {};

TEST_P(ConvBackwardTest, MatchesDirectLoops) {
  const auto& [c, dtype] = GetParam();
  const Geometry& g = c.geometry;
  const Operands x = make_operands(c, dtype);
  const Tensor grad_input =
      conv2d_backward_input(x.grad, x.weight, x.input.sizes(), {g.stride_h, g.stride_w},
                            {g.padding_h, g.padding_w}, {g.dilation_h, g.dilation_w}, g.groups);
  const Tensor grad_weight =
      conv2d_backward_weight(x.grad, x.input, x.weight.sizes(), {g.stride_h, g.stride_w},
                             {g.padding_h, g.padding_w}, {g.dilation_h, g.dilation_w}, g.groups);
  EXPECT_EQ(grad_input.sizes(), x.input.sizes());
  EXPECT_EQ(grad_weight.sizes(), x.weight.sizes());
  EXPECT_EQ(grad_input.dtype(), dtype);
  EXPECT_EQ(grad_weight.dtype(), dtype);
  const Gradients expected = reference_gradients(x.grad, x.input, x.weight, g);
  // Dot products of |a|, |b| <= 2: grad_input's have at most O/G kH kW terms, grad_weight's
  // N Ho Wo; rounding grows like sqrt(K) (see dot_floor in linalg_test.cpp), hence the floors.
  const double rtol = relative_tolerance(dtype);
  const double input_terms =
      static_cast<double>(c.out_channels / g.groups * c.kernel_h * c.kernel_w);
  const double weight_terms =
      static_cast<double>(x.grad.numel() / std::max<std::int64_t>(1, c.out_channels));
  expect_close(grad_input, expected.input, rtol, rtol * std::sqrt(input_terms) * 4.0,
               str(c.name, " input"));
  expect_close(grad_weight, expected.weight, rtol, rtol * std::sqrt(weight_terms) * 4.0,
               str(c.name, " weight"));
}

INSTANTIATE_TEST_SUITE_P(Ops, ConvBackwardTest,
                         ::testing::Combine(::testing::ValuesIn(kCases),
                                            ::testing::Values(DType::Float32, DType::Float64)),
                         testing::CaseAndDtypeName());

class ConvBackwardGradcheck : public ::testing::TestWithParam<ConvBackwardCase> {};

TEST_P(ConvBackwardGradcheck, AreTheDerivativesOfConv2d) {
  const ConvBackwardCase& c = GetParam();
  const Geometry& g = c.geometry;
  const Operands x = make_operands(c, DType::Float64);
  const auto conv = [&](const Tensor& input, const Tensor& weight) {
    return conv2d(input, weight, {}, {g.stride_h, g.stride_w}, {g.padding_h, g.padding_w},
                  {g.dilation_h, g.dilation_w}, g.groups);
  };
  expect_gradient(
      conv2d_backward_input(x.grad, x.weight, x.input.sizes(), {g.stride_h, g.stride_w},
                            {g.padding_h, g.padding_w}, {g.dilation_h, g.dilation_w}, g.groups),
      [&](const Tensor& input) { return conv(input, x.weight); }, x.input, x.grad,
      str(c.name, " input"));
  expect_gradient(
      conv2d_backward_weight(x.grad, x.input, x.weight.sizes(), {g.stride_h, g.stride_w},
                             {g.padding_h, g.padding_w}, {g.dilation_h, g.dilation_w}, g.groups),
      [&](const Tensor& weight) { return conv(x.input, weight); }, x.weight, x.grad,
      str(c.name, " weight"));
}

// The cases small enough for central differences (two conv2d calls per element).
std::vector<ConvBackwardCase> small_cases() {
  std::vector<ConvBackwardCase> cases;
  for (const ConvBackwardCase& c : kCases) {
    if (c.finite_differences) cases.push_back(c);
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Ops, ConvBackwardGradcheck, ::testing::ValuesIn(small_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ConvBackward, OneValueMeansBothDims) {
  const Tensor grad = random_tensor({1, 3, 3, 3}, DType::Float64, -1, 1, 4);
  const Tensor weight = random_tensor({3, 2, 3, 3}, DType::Float64, -1, 1, 5);
  const Tensor input = random_tensor({1, 2, 7, 7}, DType::Float64, -1, 1, 6);
  EXPECT_EQ(conv2d_backward_input(grad, weight, {1, 2, 7, 7}, {2}, {1}, {2}).to_vector<double>(),
            conv2d_backward_input(grad, weight, {1, 2, 7, 7}, {2, 2}, {1, 1}, {2, 2})
                .to_vector<double>());
  EXPECT_EQ(conv2d_backward_weight(grad, input, {3, 2, 3, 3}, {2}, {1}, {2}).to_vector<double>(),
            conv2d_backward_weight(grad, input, {3, 2, 3, 3}, {2, 2}, {1, 1}, {2, 2})
                .to_vector<double>());
}

TEST(ConvBackward, ShapeErrorsNameTheOpAndShapes) {
  const Tensor weight = zeros({4, 3, 3, 3});
  const Tensor input = zeros({2, 3, 8, 8});
  // conv2d(input, weight) has shape [2, 4, 6, 6].
  EXPECT_THAT(error_of([&] {
                conv2d_backward_input(zeros({2, 4, 5, 6}), weight, {2, 3, 8, 8});
              }),
              HasSubstr("conv2d_backward_input: expected grad of shape [2, 4, 6, 6] (conv2d's "
                        "output for input [2, 3, 8, 8] and weight [4, 3, 3, 3]), but got [2, 4, "
                        "5, 6] (inputs: float32[2, 4, 5, 6], float32[4, 3, 3, 3])"));
  EXPECT_THAT(error_of([&] {
                conv2d_backward_weight(zeros({2, 5, 6, 6}), input, {4, 3, 3, 3});
              }),
              HasSubstr("conv2d_backward_weight: expected grad of shape [2, 4, 6, 6]"));
  EXPECT_THAT(error_of([&] {
                conv2d_backward_input(zeros({2, 4, 6, 6}), weight, {2, 2, 8, 8});
              }),
              HasSubstr("conv2d_backward_input: the input has 2 channels, but the weight expects "
                        "3 x groups (1) = 3"));
  EXPECT_THAT(error_of([&] {
                conv2d_backward_weight(zeros({2, 4, 6, 6}), input, {4, 3, 3});
              }),
              HasSubstr("conv2d_backward_weight: expected weight_sizes (O, C / groups, kH, kW) "
                        "of 4 values, but got [4, 3, 3]"));
  EXPECT_THAT(error_of([&] {
                conv2d_backward_input(zeros({2, 4, 6, 6}), weight, {3, 8, 8});
              }),
              HasSubstr("conv2d_backward_input: expected input_sizes (N, C, H, W) of 4 values, "
                        "but got [3, 8, 8]"));
  EXPECT_THAT(error_of([&] {
                conv2d_backward_input(zeros({0, 4, 1, 1}), weight, {0, 3, 2, 2});
              }),
              HasSubstr("conv2d_backward_input: the output would be empty (0 x 0)"));
  EXPECT_THAT(error_of([&] {
                conv2d_backward_input(zeros({2, 4, 6, 6}), weight, {2, 3, -8, 8});
              }),
              HasSubstr("conv2d_backward_input: expected input sizes >= 0, but got [2, 3, -8, 8]"));
  EXPECT_THAT(error_of([&] {
                conv2d_backward_weight(zeros({2, 4, 6, 6}), zeros({3, 8, 8}), {4, 3, 3, 3});
              }),
              HasSubstr("conv2d_backward_weight: expected a 4-d input (N, C, H, W), but got 3-d"));
  EXPECT_THAT(error_of([&] {
                conv2d_backward_input(zeros({2, 4, 6, 6}), zeros({4, 3, 3}), {2, 3, 8, 8});
              }),
              HasSubstr("conv2d_backward_input: expected a 4-d weight"));
}

TEST(ConvBackward, DtypeAndArgumentErrors) {
  const Tensor weight = zeros({4, 3, 3, 3});
  const Tensor grad = zeros({2, 4, 6, 6});
  EXPECT_THAT(error_of([&] {
                conv2d_backward_input(grad.to(DType::Float64), weight, {2, 3, 8, 8});
              }),
              HasSubstr("conv2d_backward_input: expected grad of dtype float32, but got float64"));
  EXPECT_THAT(error_of([&] {
                conv2d_backward_weight(grad, zeros({2, 3, 8, 8}, DType::Int64), {4, 3, 3, 3});
              }),
              HasSubstr("conv2d_backward_weight: expected float32 or float64 tensors, but got "
                        "int64"));
  EXPECT_THAT(error_of([&] {
                conv2d_backward_input(grad, weight, {2, 3, 8, 8}, {0});
              }),
              HasSubstr("conv2d_backward_input: expected strides >= 1, but got (0, 0)"));
  EXPECT_THAT(error_of([&] {
                conv2d_backward_weight(grad, zeros({2, 3, 8, 8}), {4, 3, 3, 3}, {1}, {0}, {1}, 2);
              }),
              HasSubstr("conv2d_backward_weight: the input has 3 channels, but the weight expects "
                        "3 x groups (2) = 6"));
  EXPECT_THAT(error_of([&] {
                conv2d_backward_input(grad, weight, {2, 3, 8, 8}, {1, 1, 1});
              }),
              HasSubstr("conv2d_backward_input: expected stride as one value or two"));
}

}  // namespace
}  // namespace grove::ops
