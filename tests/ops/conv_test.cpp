// conv2d against a direct convolution in double: strides, paddings, dilations (square and not),
// groups (depthwise too), 1x1 kernels (the path without im2col), with and without bias,
// non-contiguous input, weight and bias, size-0 batch and channels, sizes that take the threaded
// paths; and every error path.
#include "ops/conv.h"

#include "op_test_util.h"

namespace grove::ops {
namespace {

using testing::elements;
using testing::error_of;
using testing::expect_close;
using ::testing::HasSubstr;
using testing::non_contiguous;
using testing::random_tensor;
using testing::relative_tolerance;

struct Geometry {
  std::int64_t stride_h, stride_w, padding_h, padding_w, dilation_h, dilation_w, groups;
};

// out[n][o][y][x] = bias[o] + sum over c, i, j of
//   input[n][g C/G + c][y sH - pH + i dH][x sW - pW + j dW] * weight[o][c][i][j],  g = o / (O/G)
// with the input read as 0 outside its plane.
std::vector<double> reference_conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                                     const Geometry& g, std::int64_t out_h, std::int64_t out_w) {
  const std::int64_t batch = input.size(0), channels = input.size(1), height = input.size(2),
                     width = input.size(3);
  const std::int64_t out_channels = weight.size(0), group_channels = weight.size(1),
                     kernel_h = weight.size(2), kernel_w = weight.size(3);
  const std::vector<double> in = elements(input), w = elements(weight);
  const std::vector<double> b =
      bias.defined() ? elements(bias) : std::vector<double>(out_channels, 0.0);
  std::vector<double> out;
  for (std::int64_t n = 0; n < batch; ++n) {
    for (std::int64_t o = 0; o < out_channels; ++o) {
      const std::int64_t group = o / (out_channels / g.groups);
      for (std::int64_t y = 0; y < out_h; ++y) {
        for (std::int64_t x = 0; x < out_w; ++x) {
          double sum = b[o];
          for (std::int64_t c = 0; c < group_channels; ++c) {
            for (std::int64_t i = 0; i < kernel_h; ++i) {
              for (std::int64_t j = 0; j < kernel_w; ++j) {
                const std::int64_t iy = y * g.stride_h - g.padding_h + i * g.dilation_h;
                const std::int64_t ix = x * g.stride_w - g.padding_w + j * g.dilation_w;
                if (iy < 0 || iy >= height || ix < 0 || ix >= width) continue;
                const std::int64_t channel = group * group_channels + c;
                sum += in[((n * channels + channel) * height + iy) * width + ix] *
                       w[((o * group_channels + c) * kernel_h + i) * kernel_w + j];
              }
            }
          }
          out.push_back(sum);
        }
      }
    }
  }
  return out;
}

enum class Layout { Contiguous, Strided };

struct ConvCase {
  const char* name;
  std::int64_t batch, channels, height, width, out_channels, kernel_h, kernel_w;
  Geometry geometry;
  bool bias;
  Layout layout = Layout::Contiguous;
};

// Test names and failure messages show the case by name.
void PrintTo(const ConvCase& c, std::ostream* out) {
  *out << c.name;
}

// clang-format off
const ConvCase kConvCases[] = {
    // name                 N  C  H   W   O  kH kW  sH sW pH pW dH dW G   bias
    {"basic",               2, 3, 8,  9,  4, 3, 3, {1, 1, 0, 0, 1, 1, 1}, true},
    {"padding_1",           2, 3, 7,  7,  4, 3, 3, {1, 1, 1, 1, 1, 1, 1}, true},
    {"stride_2_padding_1",  2, 3, 9,  8,  5, 3, 3, {2, 2, 1, 1, 1, 1, 1}, true},
    {"asymmetric",          1, 2, 7,  9,  3, 3, 2, {2, 1, 0, 2, 1, 1, 1}, true},
    {"dilation_2",          2, 2, 9,  9,  3, 3, 3, {1, 1, 2, 2, 2, 2, 1}, true},
    {"stride_3_dilation",   1, 3, 11, 10, 2, 2, 3, {3, 3, 1, 0, 2, 1, 1}, true},
    {"one_by_one_direct",   2, 5, 4,  6,  3, 1, 1, {1, 1, 0, 0, 1, 1, 1}, true},
    {"one_by_one_stride",   2, 5, 5,  6,  3, 1, 1, {2, 2, 0, 0, 1, 1, 1}, true},
    {"one_by_one_padded",   1, 3, 4,  4,  2, 1, 1, {1, 1, 1, 1, 1, 1, 1}, true},
    {"groups_2",            2, 4, 6,  6,  6, 3, 3, {1, 1, 1, 1, 1, 1, 2}, true},
    {"depthwise",           2, 4, 6,  5,  8, 3, 3, {1, 1, 1, 1, 1, 1, 4}, true},
    {"no_bias",             2, 3, 6,  6,  4, 3, 3, {1, 1, 1, 1, 1, 1, 1}, false},
    {"kernel_fills_input",  2, 3, 4,  5,  2, 4, 5, {1, 1, 0, 0, 1, 1, 1}, true},
    {"strided_operands",    2, 3, 7,  6,  4, 3, 3, {1, 2, 1, 0, 1, 1, 1}, true, Layout::Strided},
    {"strided_groups",      2, 4, 6,  6,  4, 3, 3, {1, 1, 1, 1, 1, 1, 2}, true, Layout::Strided},
    {"strided_1x1",         2, 3, 5,  4,  2, 1, 1, {1, 1, 0, 0, 1, 1, 1}, false, Layout::Strided},
    {"batch_0",             0, 3, 6,  6,  4, 3, 3, {1, 1, 1, 1, 1, 1, 1}, true},
    {"channels_0",          2, 0, 5,  5,  3, 3, 3, {1, 1, 1, 1, 1, 1, 1}, true},
    // More than 16 images, not a multiple of 16: oneDNN's chunks of two and of three images
    // (float32; Note [Convolutions through oneDNN]), strided and dilated.
    {"many_images_strided", 37, 3, 9,  8,  4, 3, 3, {2, 2, 1, 1, 1, 1, 1}, true},
    {"many_images_dilated", 21, 2, 9,  9,  3, 3, 3, {1, 1, 2, 1, 2, 1, 1}, false},
    // Above kMinParallelWork: images over threads, then one image with Eigen's threads.
    {"cnn_layer2_threaded", 4, 32, 14, 14, 64, 3, 3, {1, 1, 1, 1, 1, 1, 1}, true},
    {"one_image_threaded",  1, 32, 14, 14, 64, 3, 3, {1, 1, 1, 1, 1, 1, 1}, true},
};
// clang-format on

class Conv2dTest : public ::testing::TestWithParam<std::tuple<ConvCase, DType>> {};

TEST_P(Conv2dTest, MatchesDirectConvolution) {
  const auto& [c, dtype] = GetParam();
  const Geometry& g = c.geometry;
  Tensor input = random_tensor({c.batch, c.channels, c.height, c.width}, dtype, -2, 2, 1);
  Tensor weight = random_tensor({c.out_channels, c.channels / g.groups, c.kernel_h, c.kernel_w},
                                dtype, -2, 2, 2);
  Tensor bias = c.bias ? random_tensor({c.out_channels}, dtype, -2, 2, 3) : Tensor();
  if (c.layout == Layout::Strided) {
    // A plane stored transposed, a weight and bias read with stride 3.
    input = input.transpose(2, 3).contiguous().transpose(2, 3);
    weight = non_contiguous(weight);
    if (bias.defined()) bias = non_contiguous(bias);
    ASSERT_FALSE(input.is_contiguous());
  }
  const Tensor out = conv2d(input, weight, bias, {g.stride_h, g.stride_w},
                            {g.padding_h, g.padding_w}, {g.dilation_h, g.dilation_w}, g.groups);
  const std::int64_t out_h =
      (c.height + 2 * g.padding_h - g.dilation_h * (c.kernel_h - 1) - 1) / g.stride_h + 1;
  const std::int64_t out_w =
      (c.width + 2 * g.padding_w - g.dilation_w * (c.kernel_w - 1) - 1) / g.stride_w + 1;
  EXPECT_EQ(out.sizes(), IntArrayRef({c.batch, c.out_channels, out_h, out_w}));
  EXPECT_EQ(out.dtype(), dtype);
  // A dot product of length K = C/G kH kW (+1 for the bias): see dot_floor in linalg_test.cpp;
  // inputs are within [-2, 2], so max|a| max|b| <= 4.
  const double k = static_cast<double>(weight.size(1) * c.kernel_h * c.kernel_w + 1);
  expect_close(out, reference_conv2d(input, weight, bias, g, out_h, out_w),
               relative_tolerance(dtype), relative_tolerance(dtype) * std::sqrt(k) * 4.0, c.name);
}

INSTANTIATE_TEST_SUITE_P(Ops, Conv2dTest,
                         ::testing::Combine(::testing::ValuesIn(kConvCases),
                                            ::testing::Values(DType::Float32, DType::Float64)),
                         testing::CaseAndDtypeName());

TEST(Conv2d, OneValueMeansBothDims) {
  const Tensor input = random_tensor({1, 2, 7, 7}, DType::Float64, -1, 1, 4);
  const Tensor weight = random_tensor({3, 2, 3, 3}, DType::Float64, -1, 1, 5);
  const Tensor pair = conv2d(input, weight, {}, {2, 2}, {1, 1}, {2, 2});
  const Tensor single = conv2d(input, weight, {}, {2}, {1}, {2});
  EXPECT_EQ(single.sizes(), pair.sizes());
  EXPECT_EQ(single.to_vector<double>(), pair.to_vector<double>());
}

TEST(Conv2d, ShapeErrorsNameTheOpAndShapes) {
  const Tensor input = zeros({2, 3, 8, 8});
  std::string message = error_of([&] { conv2d(input, zeros({4, 2, 3, 3})); });
  EXPECT_THAT(message, HasSubstr("conv2d: the input has 3 channels, but the weight expects 2 x "
                                 "groups (1) = 2: input [2, 3, 8, 8], weight [4, 2, 3, 3]"));
  EXPECT_THAT(message, HasSubstr("(inputs: float32[2, 3, 8, 8], float32[4, 2, 3, 3])"));
  EXPECT_THAT(error_of([&] {
                conv2d(zeros({3, 8, 8}), zeros({4, 3, 3, 3}));
              }),
              HasSubstr("conv2d: expected a 4-d input (N, C, H, W), but got 3-d"));
  EXPECT_THAT(error_of([&] {
                conv2d(input, zeros({4, 3, 3}));
              }),
              HasSubstr("conv2d: expected a 4-d weight (O, C / groups, kH, kW), but got 3-d"));
  EXPECT_THAT(error_of([&] {
                conv2d(input, zeros({4, 3, 3, 3}), zeros({5}));
              }),
              HasSubstr("conv2d: expected a bias of shape [4], but got [5]"));
  EXPECT_THAT(error_of([&] {
                conv2d(input, zeros({5, 1, 3, 3}), {}, {1}, {0}, {1}, 3);
              }),
              HasSubstr("conv2d: the weight's 5 output channels are not divisible by groups = 3"));
  EXPECT_THAT(error_of([&] {
                conv2d(input, zeros({4, 2, 3, 3}), {}, {1}, {0}, {1}, 2);
              }),
              HasSubstr("the input has 3 channels, but the weight expects 2 x groups (2) = 4"));
}

TEST(Conv2d, ImpossibleOutputSizesAreErrors) {
  EXPECT_THAT(error_of([] {
                conv2d(zeros({1, 1, 4, 4}), zeros({1, 1, 5, 5}));
              }),
              HasSubstr("conv2d: the output would be empty (0 x 0): the kernel 5 x 5 with "
                        "dilation (1, 1) spans 5 x 5, more than the padded input 4 x 4"));
  EXPECT_THAT(error_of([] {
                conv2d(zeros({1, 1, 6, 6}), zeros({1, 1, 3, 3}), {}, {1}, {0}, {3});
              }),
              HasSubstr("with dilation (3, 3) spans 7 x 7, more than the padded input 6 x 6"));
  // Padding rescues it.
  EXPECT_EQ(conv2d(zeros({1, 1, 4, 4}), zeros({1, 1, 5, 5}), {}, {1}, {1}).sizes(),
            IntArrayRef({1, 1, 2, 2}));
}

TEST(Conv2d, ArgumentErrors) {
  const Tensor input = zeros({1, 2, 6, 6});
  const Tensor weight = zeros({2, 2, 3, 3});
  EXPECT_THAT(error_of([&] {
                conv2d(input, weight, {}, {0, 1});
              }),
              HasSubstr("conv2d: expected strides >= 1, but got (0, 1)"));
  EXPECT_THAT(error_of([&] { conv2d(input, weight, {}, {1}, {-1}); }),
              HasSubstr("conv2d: expected paddings >= 0, but got (-1, -1)"));
  EXPECT_THAT(error_of([&] {
                conv2d(input, weight, {}, {1}, {0}, {1, 0});
              }),
              HasSubstr("conv2d: expected dilations >= 1, but got (1, 0)"));
  EXPECT_THAT(error_of([&] { conv2d(input, weight, {}, {1}, {0}, {1}, 0); }),
              HasSubstr("conv2d: expected groups >= 1, but got 0"));
  EXPECT_THAT(error_of([&] {
                conv2d(input, weight, {}, {1, 1, 1});
              }),
              HasSubstr("conv2d: expected stride as one value or two (height, width), but got "
                        "[1, 1, 1]"));
  EXPECT_THAT(error_of([&] { conv2d(input, weight, {}, {1}, {}); }),
              HasSubstr("conv2d: expected padding as one value or two"));
  EXPECT_THAT(error_of([&] {
                conv2d(input, zeros({2, 2, 3, 3}, DType::Float64));
              }),
              HasSubstr("conv2d: expected input and weight of one dtype, but got float32 and "
                        "float64"));
  EXPECT_THAT(error_of([&] { conv2d(input, weight, zeros({2}, DType::Float64)); }),
              HasSubstr("conv2d: expected a float32 bias, but got float64"));
  EXPECT_THAT(error_of([] {
                conv2d(zeros({1, 2, 6, 6}, DType::Int64), zeros({2, 2, 3, 3}, DType::Int64));
              }),
              HasSubstr("conv2d: expected float32 or float64 tensors, but got int64"));
}

}  // namespace
}  // namespace grove::ops
