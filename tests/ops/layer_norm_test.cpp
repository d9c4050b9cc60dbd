// layer_norm against a naive double reference: float32 and float64, one or two normalised dims,
// with and without weight and bias, non-contiguous inputs and parameters, size-1 and size-0
// shapes; the mean and rstd outputs; and the error paths.
#include "ops/layer_norm.h"

#include "op_test_util.h"

namespace grove::ops {
namespace {

using testing::element;
using testing::elements;
using testing::error_of;
using testing::expect_close;
using ::testing::HasSubstr;
using testing::non_contiguous;
using testing::random_tensor;
using testing::relative_tolerance;

struct Reference {
  std::vector<double> y, mean, rstd;
};

// Rows of n = product(normalized sizes) consecutive (row-major) elements, in double.
Reference reference_layer_norm(const Tensor& x, std::int64_t k, const Tensor& weight,
                               const Tensor& bias, double eps) {
  std::int64_t n = 1;
  for (std::int64_t d = x.dim() - k; d < x.dim(); ++d) n *= x.size(d);
  const std::vector<double> values = elements(x);
  const std::int64_t rows = n == 0 ? 0 : x.numel() / n;
  Reference result;
  for (std::int64_t r = 0; r < rows; ++r) {
    double mean = 0.0;
    for (std::int64_t j = 0; j < n; ++j) mean += values[static_cast<std::size_t>(r * n + j)];
    mean /= static_cast<double>(n);
    double var = 0.0;
    for (std::int64_t j = 0; j < n; ++j) {
      const double centred = values[static_cast<std::size_t>(r * n + j)] - mean;
      var += centred * centred;
    }
    var /= static_cast<double>(n);
    const double rstd = 1.0 / std::sqrt(var + eps);
    for (std::int64_t j = 0; j < n; ++j) {
      double y = (values[static_cast<std::size_t>(r * n + j)] - mean) * rstd;
      if (weight.defined()) y *= element(weight, j);
      if (bias.defined()) y += element(bias, j);
      result.y.push_back(y);
    }
    result.mean.push_back(mean);
    result.rstd.push_back(rstd);
  }
  return result;
}

class LayerNormTest : public ::testing::TestWithParam<DType> {};

// Compares all three outputs with the reference. y is O(1) after normalisation; its absolute
// floor (1e-6 float32, 1e-13 float64) covers elements near zero, whose relative error is large
// after rounding (x - mean) * rstd * weight + bias in the dtype.
void check(const Tensor& x, IntArrayRef normalized_shape, const Tensor& weight, const Tensor& bias,
           double eps, const std::string& what) {
  const DType dtype = x.dtype();
  const double floor = dtype == DType::Float32 ? 1e-6 : 1e-13;
  LayerNormResult result = layer_norm_with_stats(x, normalized_shape, weight, bias, eps);
  const auto k = static_cast<std::int64_t>(normalized_shape.size());
  const Reference expected = reference_layer_norm(x, k, weight, bias, eps);
  EXPECT_EQ(result.output.sizes(), x.sizes()) << what;
  DimVector stats_sizes(x.sizes());
  for (std::int64_t d = x.dim() - k; d < x.dim(); ++d) stats_sizes[static_cast<std::size_t>(d)] = 1;
  EXPECT_EQ(result.mean.sizes(), IntArrayRef(stats_sizes)) << what;
  EXPECT_EQ(result.rstd.sizes(), IntArrayRef(stats_sizes)) << what;
  EXPECT_EQ(result.mean.dtype(), dtype);
  expect_close(result.output, expected.y, relative_tolerance(dtype), floor, what + " y");
  if (product(normalized_shape) > 0) {
    expect_close(result.mean, expected.mean, relative_tolerance(dtype), floor, what + " mean");
    expect_close(result.rstd, expected.rstd, relative_tolerance(dtype), 0.0, what + " rstd");
  }
  // The user function returns the same y.
  expect_close(layer_norm(x, normalized_shape, weight, bias, eps), elements(result.output), 0.0,
               0.0, what + " layer_norm()");
}

TEST_P(LayerNormTest, MatchesReferenceInEveryLayout) {
  const DType dtype = GetParam();
  Tensor x = random_tensor({4, 3, 8}, dtype, -3, 5, 1);  // a mean far from 0
  Tensor weight = random_tensor({8}, dtype, 0.5, 1.5, 2);
  Tensor bias = random_tensor({8}, dtype, -1, 1, 3);
  check(x, {8}, weight, bias, 1e-5, "affine");
  check(x, {8}, Tensor(), Tensor(), 1e-5, "no weight or bias");
  check(x, {8}, weight, Tensor(), 1e-5, "weight only");
  check(x, {8}, Tensor(), bias, 1e-5, "bias only");
  check(x, {3, 8}, random_tensor({3, 8}, dtype, 0.5, 1.5, 4),
        random_tensor({3, 8}, dtype, -1, 1, 5), 1e-3, "two normalised dims");
  check(x, {4, 3, 8}, Tensor(), Tensor(), 1e-5, "every dim");
  check(non_contiguous(x), {8}, non_contiguous(weight), non_contiguous(bias), 1e-5,
        "non-contiguous");
  check(x.transpose(0, 2), {4}, Tensor(), Tensor(), 1e-5, "transposed");
  check(random_tensor({1, 5}, dtype, -1, 1, 6).expand({6, 5}), {5}, Tensor(), Tensor(), 1e-5,
        "expanded");
  check(random_tensor({5, 1}, dtype, -1, 1, 7), {1}, Tensor(), bias.narrow(0, 0, 1), 1e-5,
        "rows of one element");
  check(random_tensor({0, 8}, dtype, -1, 1, 8), {8}, weight, bias, 1e-5, "zero rows");
  check(random_tensor({8}, dtype, -1, 1, 9), {8}, weight, bias, 1e-5, "1-d input");
}

INSTANTIATE_TEST_SUITE_P(Ops, LayerNormTest, ::testing::Values(DType::Float32, DType::Float64),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(LayerNorm, ConstantRowsGiveBiasAndRstdFromEps) {
  // var = 0: y = 0 * rstd * weight + bias, rstd = 1 / sqrt(eps).
  Tensor x = full({2, 4}, 3.0, DType::Float64);
  Tensor bias = from_vector(std::vector<double>{1, 2, 3, 4});
  LayerNormResult result = layer_norm_with_stats(x, {4}, Tensor(), bias, 0.25);
  EXPECT_EQ(result.output.to_vector<double>(), (std::vector<double>{1, 2, 3, 4, 1, 2, 3, 4}));
  EXPECT_EQ(result.rstd.to_vector<double>(), (std::vector<double>{2.0, 2.0}));
  EXPECT_EQ(result.mean.to_vector<double>(), (std::vector<double>{3.0, 3.0}));
}

TEST(LayerNorm, EmptyRowsHaveNanStatistics) {
  LayerNormResult result = layer_norm_with_stats(zeros({3, 0}), {0});
  EXPECT_EQ(result.output.numel(), 0);
  ASSERT_EQ(result.mean.numel(), 3);
  for (float value : result.mean.to_vector<float>()) EXPECT_TRUE(std::isnan(value));
  for (float value : result.rstd.to_vector<float>()) EXPECT_TRUE(std::isnan(value));
}

TEST(LayerNorm, ErrorsNameOpShapesAndDtypes) {
  Tensor x = zeros({2, 3, 4});
  EXPECT_THAT(error_of([&] { layer_norm(x, {3}); }),
              HasSubstr("layer_norm: the normalized shape [3] must equal the input's trailing "
                        "dims, but the input has shape [2, 3, 4] (inputs: float32[2, 3, 4])"));
  EXPECT_THAT(error_of([&] { layer_norm(x, {}); }),
              HasSubstr("layer_norm: expected a normalized shape of 1 to 3 dims"));
  EXPECT_THAT(error_of([&] {
                layer_norm(x, {1, 2, 3, 4});
              }),
              HasSubstr("expected a normalized shape of 1 to 3 dims (the input's trailing dims), "
                        "but got [1, 2, 3, 4]"));
  EXPECT_THAT(error_of([&] { layer_norm(x, {4}, zeros({3})); }),
              HasSubstr("layer_norm: expected weight of shape [4] (the normalized shape), but got "
                        "[3] (inputs: float32[2, 3, 4], float32[3])"));
  EXPECT_THAT(error_of([&] { layer_norm(x, {4}, Tensor(), zeros({4}, DType::Float64)); }),
              HasSubstr("layer_norm: expected bias of dtype float32 (the input's), but got "
                        "float64 (inputs: float32[2, 3, 4], float64[4])"));
  EXPECT_THAT(error_of([&] {
                layer_norm(zeros({2, 4}, DType::Int64), {4});
              }),
              HasSubstr("layer_norm: expected a floating-point input, but got int64"));
  EXPECT_THAT(error_of([&] { layer_norm(x, {4}, Tensor(), Tensor(), -1.0); }),
              HasSubstr("layer_norm: expected a finite eps >= 0, but got -1"));
  EXPECT_THAT(error_of([&] { layer_norm(Tensor(), {4}); }),
              HasSubstr("layer_norm: input 0 is undefined"));
}

}  // namespace
}  // namespace grove::ops
