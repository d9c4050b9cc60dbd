// rms_norm against a naive double reference: float32 and float64, one or two normalised dims,
// with and without a weight, non-contiguous inputs, size-1 and size-0 shapes, the default eps
// (the dtype's machine epsilon, as PyTorch's); the rrms output; and the error paths.
// rms_norm_backward against its formula written out in double, by central differences against
// rms_norm (for x and the weight), and its errors.
#include "ops/rms_norm.h"

#include <limits>

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
  std::vector<double> y, rrms;
};

// Rows of n = product(normalized sizes) consecutive (row-major) elements, in double.
Reference reference_rms_norm(const Tensor& x, std::int64_t k, const Tensor& weight, double eps) {
  std::int64_t n = 1;
  for (std::int64_t d = x.dim() - k; d < x.dim(); ++d) n *= x.size(d);
  const std::vector<double> values = elements(x);
  const std::int64_t rows = n == 0 ? 0 : x.numel() / n;
  Reference result;
  for (std::int64_t r = 0; r < rows; ++r) {
    double squares = 0.0;
    for (std::int64_t j = 0; j < n; ++j) {
      const double v = values[static_cast<std::size_t>(r * n + j)];
      squares += v * v;
    }
    const double rrms = 1.0 / std::sqrt(squares / static_cast<double>(n) + eps);
    for (std::int64_t j = 0; j < n; ++j) {
      double y = values[static_cast<std::size_t>(r * n + j)] * rrms;
      if (weight.defined()) y *= element(weight, j);
      result.y.push_back(y);
    }
    result.rrms.push_back(rrms);
  }
  return result;
}

void check(const Tensor& x, IntArrayRef normalized_shape, const Tensor& weight, double eps,
           const std::string& what) {
  const DType dtype = x.dtype();
  const double floor = dtype == DType::Float32 ? 1e-6 : 1e-13;
  const RmsNormResult result = rms_norm_with_stats(x, normalized_shape, weight, eps);
  const auto k = static_cast<std::int64_t>(normalized_shape.size());
  const Reference expected = reference_rms_norm(x, k, weight, eps);
  EXPECT_EQ(result.output.sizes(), x.sizes()) << what;
  DimVector stats_sizes(x.sizes());
  for (std::int64_t d = x.dim() - k; d < x.dim(); ++d) stats_sizes[static_cast<std::size_t>(d)] = 1;
  EXPECT_EQ(result.rrms.sizes(), IntArrayRef(stats_sizes)) << what;
  EXPECT_EQ(result.rrms.dtype(), dtype);
  expect_close(result.output, expected.y, relative_tolerance(dtype), floor, what + " y");
  if (product(normalized_shape) > 0) {
    expect_close(result.rrms, expected.rrms, relative_tolerance(dtype), 0.0, what + " rrms");
  }
  expect_close(rms_norm(x, normalized_shape, weight, eps), elements(result.output), 0.0, 0.0,
               what + " rms_norm()");
}

class RmsNormTest : public ::testing::TestWithParam<DType> {};

TEST_P(RmsNormTest, MatchesReferenceInEveryLayout) {
  const DType dtype = GetParam();
  Tensor x = random_tensor({4, 3, 8}, dtype, -3, 5, 1);
  Tensor weight = random_tensor({8}, dtype, 0.5, 1.5, 2);
  check(x, {8}, weight, 1e-6, "weight");
  check(x, {8}, Tensor(), 1e-6, "no weight");
  check(x, {3, 8}, random_tensor({3, 8}, dtype, 0.5, 1.5, 4), 1e-3, "two normalised dims");
  check(x, {4, 3, 8}, Tensor(), 1e-5, "every dim");
  check(non_contiguous(x), {8}, non_contiguous(weight), 1e-6, "non-contiguous");
  check(x.transpose(0, 2), {4}, Tensor(), 1e-6, "transposed");
  check(random_tensor({1, 5}, dtype, -1, 1, 6).expand({6, 5}), {5}, Tensor(), 1e-6, "expanded");
  check(random_tensor({5, 1}, dtype, -1, 1, 7), {1}, Tensor(), 1e-6, "rows of one element");
  check(random_tensor({0, 8}, dtype, -1, 1, 8), {8}, weight, 1e-6, "zero rows");
  check(random_tensor({8}, dtype, -1, 1, 9), {8}, weight, 1e-6, "1-d input");
  // Enough elements to spread rows over threads.
  check(random_tensor({256, 160}, dtype, -3, 5, 10), {160}, random_tensor({160}, dtype, 0, 2, 11),
        1e-6, "threaded");
}

INSTANTIATE_TEST_SUITE_P(Ops, RmsNormTest, ::testing::Values(DType::Float32, DType::Float64),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(RmsNorm, DefaultEpsIsTheDtypesMachineEpsilon) {
  // A row of zeros: rrms = 1 / sqrt(eps).
  const RmsNormResult f32 = rms_norm_with_stats(zeros({1, 4}), {4});
  EXPECT_FLOAT_EQ(f32.rrms.to_vector<float>()[0],
                  static_cast<float>(1.0 / std::sqrt(std::numeric_limits<float>::epsilon())));
  const RmsNormResult f64 = rms_norm_with_stats(zeros({1, 4}, DType::Float64), {4});
  EXPECT_DOUBLE_EQ(f64.rrms.to_vector<double>()[0],
                   1.0 / std::sqrt(std::numeric_limits<double>::epsilon()));
}

TEST(RmsNorm, ScalesWithoutCentring) {
  // Rows (3, 4) and (-1, 1): rms 5 / sqrt(2) and 1, eps 0.
  const Tensor x = from_vector(std::vector<double>{3, 4, -1, 1}, {2, 2});
  const RmsNormResult result = rms_norm_with_stats(x, {2}, Tensor(), 0.0);
  const std::vector<double> y = result.output.to_vector<double>();
  const double r = std::sqrt(2.0) / 5.0;
  EXPECT_DOUBLE_EQ(y[0], 3 * r);
  EXPECT_DOUBLE_EQ(y[1], 4 * r);
  EXPECT_DOUBLE_EQ(y[2], -1.0);
  EXPECT_DOUBLE_EQ(y[3], 1.0);
  EXPECT_EQ(result.rrms.sizes(), (IntArrayRef{2, 1}));
}

TEST(RmsNorm, EmptyRowsHaveRrmsFromEps) {
  const RmsNormResult result = rms_norm_with_stats(zeros({3, 0}), {0}, Tensor(), 0.25);
  EXPECT_EQ(result.output.numel(), 0);
  EXPECT_EQ(result.rrms.to_vector<float>(), (std::vector<float>{2, 2, 2}));
}

TEST(RmsNorm, ErrorsNameOpShapesAndDtypes) {
  const Tensor x = zeros({2, 3, 4});
  EXPECT_THAT(error_of([&] { rms_norm(x, {3}); }),
              HasSubstr("rms_norm: the normalized shape [3] must equal the input's trailing "
                        "dims, but the input has shape [2, 3, 4] (inputs: float32[2, 3, 4])"));
  EXPECT_THAT(error_of([&] { rms_norm(x, {4}, zeros({3})); }),
              HasSubstr("rms_norm: expected weight of shape [4] (the normalized shape), but got "
                        "[3] (inputs: float32[2, 3, 4], float32[3])"));
  EXPECT_THAT(error_of([&] { rms_norm(x, {4}, zeros({4}, DType::Float64)); }),
              HasSubstr("rms_norm: expected weight of dtype float32 (the input's), but got "
                        "float64"));
  EXPECT_THAT(error_of([&] {
                rms_norm(zeros({2, 4}, DType::Int64), {4});
              }),
              HasSubstr("rms_norm: expected a floating-point input, but got int64"));
  EXPECT_THAT(error_of([&] { rms_norm(x, {4}, Tensor(), -1.0); }),
              HasSubstr("rms_norm: expected a finite eps >= 0, but got -1"));
  EXPECT_THAT(error_of([&] { rms_norm(Tensor(), {4}); }),
              HasSubstr("rms_norm: input 0 is undefined"));
}

// --- rms_norm_backward ---

struct Gradients {
  std::vector<double> input, weight;
};

// From the given rrms, with xhat_k = x_k rrms and the Jacobian
//   d xhat_k / d x_j = rrms (delta_kj - xhat_k xhat_j / N)   (eps included):
//   grad_input_j = sum over k of grad_k w_k d xhat_k / d x_j,
//   grad_weight_j = sum over rows of grad_j xhat_j.
Gradients reference_rms_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& rrms,
                                      std::int64_t n, const Tensor& weight) {
  const std::vector<double> g = elements(grad), values = elements(x), scales = elements(rrms);
  const std::vector<double> w = weight.defined() ? elements(weight) : std::vector<double>(n, 1.0);
  const auto rows = static_cast<std::int64_t>(scales.size());
  Gradients result{std::vector<double>(values.size(), 0.0), std::vector<double>(n, 0.0)};
  for (std::int64_t r = 0; r < rows; ++r) {
    std::vector<double> xhat(static_cast<std::size_t>(n));
    for (std::int64_t j = 0; j < n; ++j) {
      xhat[j] = values[r * n + j] * scales[r];
      result.weight[j] += g[r * n + j] * xhat[j];
    }
    for (std::int64_t j = 0; j < n; ++j) {
      double sum = 0.0;
      for (std::int64_t k = 0; k < n; ++k) {
        const double jacobian = scales[r] * ((k == j ? 1.0 : 0.0) - xhat[k] * xhat[j] / n);
        sum += g[r * n + k] * w[k] * jacobian;
      }
      result.input[r * n + j] = sum;
    }
  }
  return result;
}

void check_backward(const Tensor& x, IntArrayRef normalized_shape, const Tensor& weight,
                    const Tensor& grad, const std::string& what) {
  const RmsNormResult forward = rms_norm_with_stats(x, normalized_shape, weight, 1e-6);
  const RmsNormGrads grads = rms_norm_backward(grad, x, forward.rrms, normalized_shape, weight);
  EXPECT_EQ(grads.grad_input.sizes(), x.sizes()) << what;
  EXPECT_EQ(grads.grad_weight.sizes(), normalized_shape) << what;
  EXPECT_EQ(grads.grad_input.dtype(), x.dtype()) << what;
  const Gradients expected =
      reference_rms_norm_backward(grad, x, forward.rrms, product(normalized_shape), weight);
  // As layer_norm's: grad_input is rrms times a difference of O(1) terms that cancel.
  const double rtol = relative_tolerance(x.dtype());
  expect_close(grads.grad_input, expected.input, rtol, rtol * 10, what + " input");
  expect_close(grads.grad_weight, expected.weight, rtol, rtol * 10, what + " weight");
}

class RmsNormBackwardTest : public ::testing::TestWithParam<DType> {};

TEST_P(RmsNormBackwardTest, MatchesTheJacobianInEveryLayout) {
  const DType dtype = GetParam();
  const Tensor x = random_tensor({4, 3, 8}, dtype, -3, 5, 11);
  const Tensor grad = random_tensor({4, 3, 8}, dtype, -2, 2, 12);
  const Tensor weight = random_tensor({8}, dtype, 0.5, 1.5, 13);
  check_backward(x, {8}, weight, grad, "weight");
  check_backward(x, {8}, Tensor(), grad, "no weight");
  check_backward(x, {3, 8}, random_tensor({3, 8}, dtype, 0.5, 1.5, 14), grad,
                 "two normalised dims");
  check_backward(non_contiguous(x), {8}, non_contiguous(weight), non_contiguous(grad),
                 "non-contiguous");
  check_backward(random_tensor({0, 8}, dtype, -1, 1, 15), {8}, weight, zeros({0, 8}, dtype),
                 "zero rows");
  check_backward(random_tensor({256, 160}, dtype, -3, 5, 18), {160},
                 random_tensor({160}, dtype, 0.5, 1.5, 19),
                 random_tensor({256, 160}, dtype, -2, 2, 20), "threaded");
}

INSTANTIATE_TEST_SUITE_P(Ops, RmsNormBackwardTest,
                         ::testing::Values(DType::Float32, DType::Float64),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(RmsNormBackward, IsTheDerivativeOfRmsNorm) {
  const Tensor x = random_tensor({3, 2, 5}, DType::Float64, -3, 5, 21);
  const Tensor grad = random_tensor({3, 2, 5}, DType::Float64, -2, 2, 22);
  for (const DimVector& shape : {DimVector{5}, DimVector{2, 5}}) {
    for (const bool has_weight : {true, false}) {
      const std::string what = str(IntArrayRef(shape), has_weight ? " weight" : " no weight");
      const Tensor weight = random_tensor(shape, DType::Float64, 0.5, 1.5, 23);
      const Tensor used_weight = has_weight ? weight : Tensor();
      const RmsNormResult forward = rms_norm_with_stats(x, shape, used_weight, 1e-5);
      const RmsNormGrads grads = rms_norm_backward(grad, x, forward.rrms, shape, used_weight);
      expect_gradient(
          grads.grad_input, [&](const Tensor& t) { return rms_norm(t, shape, used_weight, 1e-5); },
          x, grad, what + ": input");
      // Without a weight, grad_weight is the derivative at weight = ones.
      const Tensor at = has_weight ? weight : ones(shape, DType::Float64);
      expect_gradient(
          grads.grad_weight, [&](const Tensor& w) { return rms_norm(x, shape, w, 1e-5); }, at, grad,
          what + ": weight");
    }
  }
}

TEST(RmsNormBackward, ErrorsNameOpShapesAndDtypes) {
  const Tensor x = zeros({2, 3, 4});
  const Tensor rrms = zeros({2, 3, 1});
  EXPECT_THAT(error_of([&] {
                rms_norm_backward(zeros({2, 3}), x, rrms, {4});
              }),
              HasSubstr("rms_norm_backward: expected grad of the input's shape and dtype "
                        "float32[2, 3, 4], but got float32[2, 3]"));
  EXPECT_THAT(error_of([&] {
                rms_norm_backward(x, x, zeros({2, 3}), {4});
              }),
              HasSubstr("rms_norm_backward: expected rrms of shape and dtype float32[2, 3, 1] "
                        "(rms_norm_with_stats' output for this input), but got float32[2, 3]"));
  EXPECT_THAT(error_of([&] { rms_norm_backward(x, x, rrms, {4}, zeros({5})); }),
              HasSubstr("rms_norm_backward: expected weight of shape [4]"));
}

}  // namespace
}  // namespace grove::ops
