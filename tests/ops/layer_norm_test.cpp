// layer_norm against a naive double reference: float32 and float64, one or two normalised dims,
// with and without weight and bias, non-contiguous inputs and parameters, size-1 and size-0
// shapes; the mean and rstd outputs; and the error paths. layer_norm_backward against the
// Jacobian of xhat written out in double, by central differences against layer_norm (for x,
// weight and bias, with and without weight, one and two normalised dims), and its errors.
#include "ops/layer_norm.h"

#include "op_test_util.h"

namespace grove::ops {
namespace {

using testing::element;
using testing::elements;
using testing::error_of;
using testing::expect_close;
using testing::expect_gradient;
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

// --- layer_norm_backward ---

struct Gradients {
  std::vector<double> input, weight, bias;
};

// From the given mean and rstd, with xhat_k = (x_k - mean) rstd and the Jacobian
//   d xhat_k / d x_j = rstd (delta_kj - 1 / N - xhat_k xhat_j / N)   (eps included):
//   grad_input_j = sum over k of grad_k w_k d xhat_k / d x_j,
//   grad_weight_j = sum over rows of grad_j xhat_j,  grad_bias_j = sum over rows of grad_j.
Gradients reference_layer_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& mean,
                                        const Tensor& rstd, std::int64_t n, const Tensor& weight) {
  const std::vector<double> g = elements(grad), values = elements(x), means = elements(mean),
                            rstds = elements(rstd);
  const std::vector<double> w = weight.defined() ? elements(weight) : std::vector<double>(n, 1.0);
  const auto rows = static_cast<std::int64_t>(means.size());
  Gradients result{std::vector<double>(values.size(), 0.0), std::vector<double>(n, 0.0),
                   std::vector<double>(n, 0.0)};
  for (std::int64_t r = 0; r < rows; ++r) {
    std::vector<double> xhat(static_cast<std::size_t>(n));
    for (std::int64_t j = 0; j < n; ++j) {
      xhat[j] = (values[r * n + j] - means[r]) * rstds[r];
      result.weight[j] += g[r * n + j] * xhat[j];
      result.bias[j] += g[r * n + j];
    }
    for (std::int64_t j = 0; j < n; ++j) {
      double sum = 0.0;
      for (std::int64_t k = 0; k < n; ++k) {
        const double jacobian = rstds[r] * ((k == j ? 1.0 : 0.0) - 1.0 / n - xhat[k] * xhat[j] / n);
        sum += g[r * n + k] * w[k] * jacobian;
      }
      result.input[r * n + j] = sum;
    }
  }
  return result;
}

void check_backward(const Tensor& x, IntArrayRef normalized_shape, const Tensor& weight,
                    const Tensor& grad, const std::string& what) {
  const LayerNormResult forward = layer_norm_with_stats(x, normalized_shape, weight);
  const LayerNormGrads grads =
      layer_norm_backward(grad, x, forward.mean, forward.rstd, normalized_shape, weight);
  EXPECT_EQ(grads.grad_input.sizes(), x.sizes()) << what;
  EXPECT_EQ(grads.grad_weight.sizes(), normalized_shape) << what;
  EXPECT_EQ(grads.grad_bias.sizes(), normalized_shape) << what;
  EXPECT_EQ(grads.grad_input.dtype(), x.dtype()) << what;
  const Gradients expected = reference_layer_norm_backward(grad, x, forward.mean, forward.rstd,
                                                           product(normalized_shape), weight);
  // grad_input is rstd times a difference of O(1) terms that cancel, so it carries the float32
  // rounding of its inputs (and of mean and rstd) as an absolute error of a few ulps of
  // rstd * |grad| <= 2; the parameter sums add up to M terms of size <= 5 in double.
  const double rtol = relative_tolerance(x.dtype());
  expect_close(grads.grad_input, expected.input, rtol, rtol * 10, what + " input");
  expect_close(grads.grad_weight, expected.weight, rtol, rtol * 10, what + " weight");
  expect_close(grads.grad_bias, expected.bias, rtol, rtol * 10, what + " bias");
}

class LayerNormBackwardTest : public ::testing::TestWithParam<DType> {};

TEST_P(LayerNormBackwardTest, MatchesTheJacobianInEveryLayout) {
  const DType dtype = GetParam();
  const Tensor x = random_tensor({4, 3, 8}, dtype, -3, 5, 11);
  const Tensor grad = random_tensor({4, 3, 8}, dtype, -2, 2, 12);
  const Tensor weight = random_tensor({8}, dtype, 0.5, 1.5, 13);
  check_backward(x, {8}, weight, grad, "weight");
  check_backward(x, {8}, Tensor(), grad, "no weight");
  check_backward(x, {3, 8}, random_tensor({3, 8}, dtype, 0.5, 1.5, 14), grad,
                 "two normalised dims");
  check_backward(x, {3, 8}, Tensor(), grad, "two normalised dims, no weight");
  check_backward(non_contiguous(x), {8}, non_contiguous(weight), non_contiguous(grad),
                 "non-contiguous");
  check_backward(x, {8}, weight, grad.transpose(0, 1).contiguous().transpose(0, 1),
                 "transposed grad");
  check_backward(random_tensor({0, 8}, dtype, -1, 1, 15), {8}, weight, zeros({0, 8}, dtype),
                 "zero rows");
  check_backward(random_tensor({8}, dtype, -1, 1, 16), {8}, weight,
                 random_tensor({8}, dtype, -1, 1, 17), "1-d input");
  // More than one block of columns, and enough elements to split rows over threads.
  check_backward(random_tensor({256, 160}, dtype, -3, 5, 18), {160},
                 random_tensor({160}, dtype, 0.5, 1.5, 19),
                 random_tensor({256, 160}, dtype, -2, 2, 20), "threaded");
}

INSTANTIATE_TEST_SUITE_P(Ops, LayerNormBackwardTest,
                         ::testing::Values(DType::Float32, DType::Float64),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(LayerNormBackward, IsTheDerivativeOfLayerNorm) {
  const Tensor x = random_tensor({3, 2, 5}, DType::Float64, -3, 5, 21);
  const Tensor grad = random_tensor({3, 2, 5}, DType::Float64, -2, 2, 22);
  const struct {
    const char* what;
    DimVector shape;
    bool has_weight;
  } cases[] = {
      {"weight", {5}, true},
      {"no weight", {5}, false},
      {"two dims", {2, 5}, true},
      {"two dims, no weight", {2, 5}, false},
  };
  for (const auto& c : cases) {
    const Tensor weight = random_tensor(c.shape, DType::Float64, 0.5, 1.5, 23);
    const Tensor bias = random_tensor(c.shape, DType::Float64, -1, 1, 24);
    const Tensor used_weight = c.has_weight ? weight : Tensor();
    const LayerNormResult forward = layer_norm_with_stats(x, c.shape, used_weight, bias);
    const LayerNormGrads grads =
        layer_norm_backward(grad, x, forward.mean, forward.rstd, c.shape, used_weight);
    expect_gradient(
        grads.grad_input,
        [&](const Tensor& t) { return layer_norm(t, c.shape, used_weight, bias); }, x, grad,
        str(c.what, ": input"));
    // Without a weight, grad_weight is the derivative at weight = ones.
    const Tensor at = c.has_weight ? weight : ones(c.shape, DType::Float64);
    expect_gradient(
        grads.grad_weight, [&](const Tensor& w) { return layer_norm(x, c.shape, w, bias); }, at,
        grad, str(c.what, ": weight"));
    expect_gradient(
        grads.grad_bias, [&](const Tensor& b) { return layer_norm(x, c.shape, used_weight, b); },
        bias, grad, str(c.what, ": bias"));
  }
}

TEST(LayerNormBackward, ErrorsNameOpShapesAndDtypes) {
  const Tensor x = zeros({2, 3, 4});
  const Tensor stats = zeros({2, 3, 1});
  EXPECT_THAT(error_of([&] {
                layer_norm_backward(zeros({2, 3}), x, stats, stats, {4});
              }),
              HasSubstr("layer_norm_backward: expected grad of the input's shape and dtype "
                        "float32[2, 3, 4], but got float32[2, 3] (inputs: float32[2, 3], "
                        "float32[2, 3, 4], float32[2, 3, 1], float32[2, 3, 1])"));
  EXPECT_THAT(error_of([&] { layer_norm_backward(x.to(DType::Float64), x, stats, stats, {4}); }),
              HasSubstr("expected grad of the input's shape and dtype float32[2, 3, 4], but got "
                        "float64[2, 3, 4]"));
  EXPECT_THAT(error_of([&] {
                layer_norm_backward(x, x, zeros({2, 3}), stats, {4});
              }),
              HasSubstr("layer_norm_backward: expected mean of shape and dtype float32[2, 3, 1] "
                        "(layer_norm_with_stats' output for this input), but got float32[2, 3]"));
  EXPECT_THAT(error_of([&] {
                layer_norm_backward(x, x, stats, zeros({2, 3, 1}, DType::Float64), {4});
              }),
              HasSubstr("expected rstd of shape and dtype float32[2, 3, 1]"));
  EXPECT_THAT(error_of([&] { layer_norm_backward(x, x, stats, stats, {4}, zeros({3})); }),
              HasSubstr("layer_norm_backward: expected weight of shape [4] (the normalized "
                        "shape), but got [3]"));
  EXPECT_THAT(error_of([&] { layer_norm_backward(x, x, stats, stats, {3}); }),
              HasSubstr("layer_norm_backward: the normalized shape [3] must equal the input's "
                        "trailing dims"));
  EXPECT_THAT(error_of([&] {
                layer_norm_backward(zeros({2, 4}, DType::Int64), zeros({2, 4}, DType::Int64),
                                    zeros({2, 1}, DType::Int64), zeros({2, 1}, DType::Int64), {4});
              }),
              HasSubstr("layer_norm_backward: expected a floating-point input, but got int64"));
}

}  // namespace
}  // namespace grove::ops
