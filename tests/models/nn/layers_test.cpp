// Each layer against a plain reference computed here in double, its parameters' initial values
// (bounds and statistics), and gradients reaching every parameter.
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/autograd.h"
#include "models/nn/nn.h"
#include "ops/elementwise.h"
#include "ops/random.h"
#include "ops/reduce.h"
#include "tests/models/nn/nn_test_util.h"

namespace grove::nn {
namespace {

using testing::expect_close;
using testing::values;

// float32 kernels against double references on values of size ~1 with sums of a few dozen
// terms: rounding stays below 1e-5.
constexpr double kFloatTolerance = 1e-5;

TEST(Linear, MatchesMatmulPlusBiasInDouble) {
  manual_seed(11);
  Linear linear(5, 3);
  const Tensor x = ops::randn({2, 4, 5});  // leading dims are batch dims
  const std::vector<double> w = values(linear.weight()), b = values(linear.bias()), xs = values(x);
  std::vector<double> expected;
  for (int row = 0; row < 8; ++row) {
    for (int out = 0; out < 3; ++out) {
      double sum = b[out];
      for (int in = 0; in < 5; ++in) sum += xs[row * 5 + in] * w[out * 5 + in];
      expected.push_back(sum);
    }
  }
  const Tensor y = linear(x);
  EXPECT_EQ(y.sizes(), IntArrayRef({2, 4, 3}));
  expect_close(values(y), expected, kFloatTolerance, kFloatTolerance);

  Linear no_bias(5, 3, /*bias=*/false);
  EXPECT_FALSE(no_bias.bias().defined());
  EXPECT_EQ(testing::names(no_bias.named_parameters()), (std::vector<std::string>{"weight"}));
  EXPECT_NE(testing::error_message([&] {
              linear(ops::randn({2, 4}));
            }).find("(*, 5)"),
            std::string::npos);
}

TEST(Linear, InitIsUniformWithinOneOverSqrtFanIn) {
  manual_seed(12);
  Linear linear(256, 512);
  const double bound = 1.0 / 16.0;  // 1 / sqrt(256)
  for (const Tensor& tensor : {linear.weight(), linear.bias()}) {
    const testing::Stats s = testing::stats(tensor);
    EXPECT_GE(s.min, -bound);
    EXPECT_LT(s.max, bound);
    // U(-b, b): mean 0, std b / sqrt 3. The weight has 131072 draws, the bias 512: the sample
    // mean's standard error is b / sqrt(3 n) (0.0016 b and 0.026 b), so 0.15 b is > 5 errors
    // for the bias and far more for the weight; the std's relative error is ~1 / sqrt(n) (4%
    // for the bias), so 20% tolerance.
    EXPECT_NEAR(s.mean, 0.0, 0.15 * bound);
    EXPECT_NEAR(s.std, bound / std::sqrt(3.0), 0.2 * bound / std::sqrt(3.0));
  }
  // And it uses the whole range: with 131072 draws the extremes lie within 1% of the bounds.
  const testing::Stats weight = testing::stats(linear.weight());
  EXPECT_LT(weight.min, -0.99 * bound);
  EXPECT_GT(weight.max, 0.99 * bound);
}

TEST(Linear, InitIsReproducibleFromTheSeed) {
  manual_seed(5);
  Linear first(7, 3);
  manual_seed(5);
  Linear second(7, 3);
  manual_seed(6);
  Linear third(7, 3);
  EXPECT_EQ(values(first.weight()), values(second.weight()));
  EXPECT_EQ(values(first.bias()), values(second.bias()));
  EXPECT_NE(values(first.weight()), values(third.weight()));
}

TEST(Conv2d, MatchesADirectConvolutionInDouble) {
  manual_seed(13);
  const std::int64_t n = 2, c = 3, o = 4, h = 6, w = 5, k = 3, stride = 2, pad = 1;
  Conv2d conv(c, o, k, stride, pad);
  EXPECT_EQ(conv.weight().sizes(), IntArrayRef({o, c, k, k}));
  const Tensor x = ops::randn({n, c, h, w});
  const std::vector<double> xs = values(x), ws = values(conv.weight()), bs = values(conv.bias());
  const std::int64_t ho = (h + 2 * pad - k) / stride + 1, wo = (w + 2 * pad - k) / stride + 1;
  std::vector<double> expected;
  for (std::int64_t b = 0; b < n; ++b) {
    for (std::int64_t oc = 0; oc < o; ++oc) {
      for (std::int64_t oy = 0; oy < ho; ++oy) {
        for (std::int64_t ox = 0; ox < wo; ++ox) {
          double sum = bs[oc];
          for (std::int64_t ic = 0; ic < c; ++ic) {
            for (std::int64_t ky = 0; ky < k; ++ky) {
              for (std::int64_t kx = 0; kx < k; ++kx) {
                const std::int64_t iy = oy * stride - pad + ky, ix = ox * stride - pad + kx;
                if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;  // zero padding
                sum += xs[((b * c + ic) * h + iy) * w + ix] * ws[((oc * c + ic) * k + ky) * k + kx];
              }
            }
          }
          expected.push_back(sum);
        }
      }
    }
  }
  const Tensor y = conv(x);
  EXPECT_EQ(y.sizes(), IntArrayRef({n, o, ho, wo}));
  expect_close(values(y), expected, kFloatTolerance, kFloatTolerance);
}

TEST(Conv2d, InitBoundUsesInChannelsTimesKernelArea) {
  manual_seed(14);
  Conv2d conv(8, 16, 3);
  const double bound = 1.0 / std::sqrt(8.0 * 9.0);  // fan_in = 72
  for (const Tensor& tensor : {conv.weight(), conv.bias()}) {
    const testing::Stats s = testing::stats(tensor);
    EXPECT_GE(s.min, -bound);
    EXPECT_LT(s.max, bound);
  }
  // 1152 weights: extremes within 2% of the bounds (probability of missing ~1e-5 per side).
  const testing::Stats weight = testing::stats(conv.weight());
  EXPECT_LT(weight.min, -0.98 * bound);
  EXPECT_GT(weight.max, 0.98 * bound);
}

TEST(MaxPool2d, TakesTheMaximumOfEachWindow) {
  const Tensor x = ops::randn({1, 2, 4, 6});
  const std::vector<double> xs = values(x);
  MaxPool2d pool(2);
  std::vector<double> expected;
  for (int plane = 0; plane < 2; ++plane) {
    for (int oy = 0; oy < 2; ++oy) {
      for (int ox = 0; ox < 3; ++ox) {
        double best = -INFINITY;
        for (int ky = 0; ky < 2; ++ky) {
          for (int kx = 0; kx < 2; ++kx) {
            best = std::max(best, xs[(plane * 4 + oy * 2 + ky) * 6 + ox * 2 + kx]);
          }
        }
        expected.push_back(best);
      }
    }
  }
  const Tensor y = pool(x);
  EXPECT_EQ(y.sizes(), IntArrayRef({1, 2, 2, 3}));
  expect_close(values(y), expected, 0.0);  // a copy of chosen elements: exact
  EXPECT_EQ(MaxPool2d(3, 1)(x).sizes(), IntArrayRef({1, 2, 2, 4}));
}

TEST(Activations, ReluAndExactGelu) {
  const Tensor x = ops::randn({50}) * 3.0;
  std::vector<double> relu, gelu;
  for (const double v : values(x)) {
    relu.push_back(std::max(v, 0.0));
    gelu.push_back(0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))));
  }
  expect_close(values(ReLU()(x)), relu, 0.0);
  expect_close(values(GELU()(x)), gelu, kFloatTolerance, kFloatTolerance);
  const Tensor image = zeros({2, 3, 4, 5});
  EXPECT_EQ(Flatten()(image).sizes(), IntArrayRef({2, 60}));
  EXPECT_EQ(Flatten(0, 1)(image).sizes(), IntArrayRef({6, 4, 5}));
}

TEST(Dropout, ZeroesAFractionInTrainingAndIsIdentityInEval) {
  manual_seed(15);
  Dropout dropout(0.25);
  const Tensor x = ops::rand({20000}) + 1.0;  // in [1, 2): a zero can only be a dropped element
  const std::vector<double> in = values(x), out = values(dropout(x));
  std::size_t dropped = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (out[i] == 0.0) {
      ++dropped;
    } else {
      EXPECT_NEAR(out[i], in[i] / 0.75, 1e-6);  // kept elements scaled by 1 / (1 - p)
    }
  }
  // Binomial(20000, 0.25): mean 5000, std 61; 400 is more than 6 standard deviations.
  EXPECT_NEAR(static_cast<double>(dropped), 5000.0, 400.0);
  dropout.eval();
  EXPECT_EQ(dropout(x).impl(), x.impl());  // the input itself
  EXPECT_NE(testing::error_message([] { Dropout(1.0); }).find("[0, 1)"), std::string::npos);
}

TEST(LayerNorm, NormalisesRowsThenScalesAndShifts) {
  manual_seed(16);
  LayerNorm norm(6);
  EXPECT_EQ(values(norm.weight()), std::vector<double>(6, 1.0));
  EXPECT_EQ(values(norm.bias()), std::vector<double>(6, 0.0));
  {
    autograd::NoGradGuard no_grad;  // give the affine parameters non-trivial values
    norm.weight().copy_(ops::randn({6}));
    norm.bias().copy_(ops::randn({6}));
  }
  const Tensor x = ops::randn({2, 3, 6}) * 2.0 + 1.0;
  const std::vector<double> xs = values(x), g = values(norm.weight()), b = values(norm.bias());
  std::vector<double> expected;
  for (int row = 0; row < 6; ++row) {
    double mean = 0.0, var = 0.0;
    for (int i = 0; i < 6; ++i) mean += xs[row * 6 + i] / 6.0;
    for (int i = 0; i < 6; ++i) var += (xs[row * 6 + i] - mean) * (xs[row * 6 + i] - mean) / 6.0;
    for (int i = 0; i < 6; ++i) {
      expected.push_back((xs[row * 6 + i] - mean) / std::sqrt(var + 1e-5) * g[i] + b[i]);
    }
  }
  expect_close(values(norm(x)), expected, kFloatTolerance, kFloatTolerance);
  EXPECT_FALSE(LayerNorm(6, 1e-5, /*elementwise_affine=*/false).weight().defined());
  EXPECT_NE(testing::error_message([&] {
              norm(ops::randn({2, 5}));
            }).find("trailing dims"),
            std::string::npos);
}

TEST(RMSNorm, ScalesRowsByTheirRootMeanSquareThenByTheWeight) {
  manual_seed(18);
  RMSNorm norm(6, 1e-6);
  EXPECT_EQ(values(norm.weight()), std::vector<double>(6, 1.0));
  EXPECT_EQ(norm.named_parameters().size(), 1u);  // a weight, no bias
  {
    autograd::NoGradGuard no_grad;
    norm.weight().copy_(ops::randn({6}));
  }
  const Tensor x = ops::randn({2, 3, 6}) * 2.0 + 1.0;
  const std::vector<double> xs = values(x), g = values(norm.weight());
  std::vector<double> expected;
  for (int row = 0; row < 6; ++row) {
    double squares = 0.0;
    for (int i = 0; i < 6; ++i) squares += xs[row * 6 + i] * xs[row * 6 + i] / 6.0;
    for (int i = 0; i < 6; ++i)
      expected.push_back(xs[row * 6 + i] / std::sqrt(squares + 1e-6) * g[i]);
  }
  expect_close(values(norm(x)), expected, kFloatTolerance, kFloatTolerance);
  EXPECT_FALSE(RMSNorm(6, std::nullopt, /*elementwise_affine=*/false).weight().defined());
  EXPECT_EQ(RMSNorm(6).extra_repr(), "[6], eps=None, elementwise_affine=true");
  EXPECT_NE(testing::error_message([&] {
              norm(ops::randn({2, 5}));
            }).find("RMSNorm: expected an input whose trailing dims are [6]"),
            std::string::npos);
  EXPECT_NE(
      testing::error_message([] { RMSNorm(6, -1.0); }).find("RMSNorm: expected a finite eps >= 0"),
      std::string::npos);
  // The gradient reaches the input and the weight.
  const Tensor leaf = ops::randn({4, 6}).requires_grad_();
  ops::sum(norm(leaf)).backward();
  EXPECT_TRUE(leaf.grad().defined());
  EXPECT_TRUE(norm.weight().grad().defined());
}

TEST(Embedding, PicksRowsAndStartsStandardNormal) {
  manual_seed(17);
  Embedding table(256, 64);
  const testing::Stats s = testing::stats(table.weight());
  // 16384 draws of N(0, 1): the mean's standard error is 0.008 and the std's 0.0055, so 0.05
  // is more than 6 errors for both.
  EXPECT_NEAR(s.mean, 0.0, 0.05);
  EXPECT_NEAR(s.std, 1.0, 0.05);
  const Tensor indices = from_vector<std::int64_t>({3, 0, 255, 3}, {2, 2});
  const Tensor rows = table(indices);
  EXPECT_EQ(rows.sizes(), IntArrayRef({2, 2, 64}));
  EXPECT_EQ(values(rows.select(0, 0).select(0, 0)), values(table.weight().select(0, 3)));
  EXPECT_EQ(values(rows.select(0, 1).select(0, 0)), values(table.weight().select(0, 255)));
  EXPECT_NE(testing::error_message([&] { table(zeros({2})); }).find("int64"), std::string::npos);
}

TEST(Gradients, ReachEveryParameterWithItsShape) {
  manual_seed(18);
  Sequential net(std::vector<std::shared_ptr<Module>>{
      std::make_shared<Conv2d>(1, 4, 3, 1, 1), std::make_shared<ReLU>(),
      std::make_shared<MaxPool2d>(2), std::make_shared<Flatten>(),
      std::make_shared<Linear>(4 * 3 * 3, 5), std::make_shared<LayerNorm>(5),
      std::make_shared<Dropout>(0.1), std::make_shared<GELU>(), std::make_shared<Linear>(5, 2)});
  ops::sum(net(ops::randn({3, 1, 6, 6}))).backward();
  for (const auto& [name, parameter] : net.named_parameters()) {
    ASSERT_TRUE(parameter.grad().defined()) << name;
    EXPECT_EQ(parameter.grad().sizes(), parameter.sizes()) << name;
  }
  // Embedding: only the picked rows get gradient.
  Embedding table(4, 3);
  ops::sum(table(from_vector<std::int64_t>({1, 1, 2}))).backward();
  EXPECT_EQ(values(table.weight().grad()),
            (std::vector<double>{0, 0, 0, 2, 2, 2, 1, 1, 1, 0, 0, 0}));
}

TEST(Gradcheck, LinearInDouble) {
  manual_seed(19);
  Linear linear(3, 2);
  linear.to(DType::Float64);
  const Tensor x = ops::randn({4, 3}, DType::Float64).requires_grad_();
  const auto result =
      autograd::gradcheck([&](std::span<const Tensor> inputs) { return linear(inputs[0]); },
                          {x, linear.weight(), linear.bias()});
  EXPECT_TRUE(result.ok) << result.report;
}

}  // namespace
}  // namespace grove::nn
