// Random ops and fills: determinism with manual_seed and with a Generator, fresh numbers on
// successive calls, values independent of the target's layout, statistics of rand, randn,
// randint, uniform_, normal_ and dropout within tolerances derived below, dropout's mask and
// identity cases, a generator that is not serving a capture refused inside one, and the errors.
//
// Statistical tolerances: with n independent samples of variance s^2, the sample mean has
// standard deviation s / sqrt(n) and the sample variance about s^2 sqrt(2 / n) (for normal data;
// sqrt((m4 - s^4) / n) in general). Each check allows 5 of those standard deviations, so a
// correct generator fails with probability below 1e-6 per check, while a biased one (wrong
// scale or shift, mask probability off by 1%) fails for sure. Seeds are fixed, so the tests are
// deterministic anyway; the bounds say why they are not tuned to the seed.
#include "ops/random.h"

#include "core/device_graph.h"
#include "op_test_util.h"
#include "ops/inplace.h"

namespace grove::ops {
namespace {

using testing::elements;
using testing::error_of;
using ::testing::HasSubstr;
using testing::non_contiguous;
using testing::random_tensor;

struct Moments {
  double mean = 0, variance = 0, min = 0, max = 0;
};

Moments moments(const Tensor& x) {
  const std::vector<double> values = elements(x);
  Moments m;
  m.min = m.max = values.at(0);
  for (double v : values) {
    m.mean += v;
    m.min = std::min(m.min, v);
    m.max = std::max(m.max, v);
  }
  m.mean /= static_cast<double>(values.size());
  for (double v : values) m.variance += (v - m.mean) * (v - m.mean);
  m.variance /= static_cast<double>(values.size() - 1);
  return m;
}

constexpr std::int64_t kSamples = 200000;
const double kRootN = std::sqrt(static_cast<double>(kSamples));

class RandomTest : public ::testing::TestWithParam<DType> {};

TEST_P(RandomTest, RandIsUniformOnTheUnitInterval) {
  manual_seed(1);
  const Moments m = moments(rand({kSamples}, GetParam()));
  // U[0, 1): mean 1/2, variance 1/12, fourth central moment 1/80.
  EXPECT_NEAR(m.mean, 0.5, 5 * std::sqrt(1.0 / 12) / kRootN);
  EXPECT_NEAR(m.variance, 1.0 / 12, 5 * std::sqrt(1.0 / 80 - 1.0 / 144) / kRootN);
  EXPECT_GE(m.min, 0.0);
  EXPECT_LT(m.max, 1.0);
}

TEST_P(RandomTest, RandnIsStandardNormal) {
  manual_seed(2);
  const Moments m = moments(randn({kSamples}, GetParam()));
  EXPECT_NEAR(m.mean, 0.0, 5.0 / kRootN);
  EXPECT_NEAR(m.variance, 1.0, 5 * std::sqrt(2.0) / kRootN);
  // Box-Muller from 24-bit (float32) uniforms cannot exceed ~5.8; 200000 normals reach about 4.5.
  EXPECT_GT(m.max, 3.5);
  EXPECT_LT(m.min, -3.5);
}

TEST_P(RandomTest, FillsHaveTheRequestedMeanAndSpread) {
  Tensor x = empty({kSamples}, GetParam());
  uniform_(x, -3.0, 5.0);
  Moments m = moments(x);
  const double width = 8.0;  // U[-3, 5): mean 1, variance 64 / 12
  EXPECT_NEAR(m.mean, 1.0, 5 * width / std::sqrt(12.0) / kRootN);
  EXPECT_NEAR(m.variance, width * width / 12,
              5 * width * width * std::sqrt(1.0 / 80 - 1.0 / 144) / kRootN);
  EXPECT_GE(m.min, -3.0);
  EXPECT_LE(m.max, 5.0);
  normal_(x, 2.0, 0.5);
  m = moments(x);
  EXPECT_NEAR(m.mean, 2.0, 5 * 0.5 / kRootN);
  EXPECT_NEAR(m.variance, 0.25, 5 * 0.25 * std::sqrt(2.0) / kRootN);
  normal_(x, -1.0, 0.0);  // std 0: every value is the mean
  EXPECT_EQ(moments(x).max, -1.0);
  EXPECT_EQ(moments(x).min, -1.0);
}

TEST_P(RandomTest, SameSeedSameNumbersAndSuccessiveCallsDiffer) {
  const DType dtype = GetParam();
  manual_seed(7);
  const std::vector<double> first = elements(rand({33}, dtype));
  const std::vector<double> second = elements(randn({33}, dtype));
  manual_seed(7);
  EXPECT_EQ(elements(rand({33}, dtype)), first);
  EXPECT_EQ(elements(randn({33}, dtype)), second);
  EXPECT_NE(elements(rand({33}, dtype)), first);  // the generator moved on

  Generator a(123), b(123);
  EXPECT_EQ(elements(randn({3, 5}, dtype, &a)), elements(randn({3, 5}, dtype, &b)));
  Generator other(124);
  EXPECT_NE(elements(randn({3, 5}, dtype, &a)), elements(randn({3, 5}, dtype, &other)));
  // A private generator does not move the default one.
  manual_seed(7);
  (void)rand({10}, dtype, &a);
  EXPECT_EQ(elements(rand({33}, dtype)), first);
}

TEST_P(RandomTest, ValuesDependOnTheIndexNotTheLayout) {
  const DType dtype = GetParam();
  Generator a(5), b(5), c(5);
  const Tensor contiguous = uniform_(empty({4, 6}, dtype), 0.0, 1.0, &a);
  Tensor strided = non_contiguous(zeros({4, 6}, dtype));
  const std::uint64_t version = strided.version();
  uniform_(strided, 0.0, 1.0, &b);
  EXPECT_EQ(strided.version(), version + 1);
  EXPECT_EQ(elements(strided), elements(contiguous));
  // uniform_(x, 0, 1) draws exactly what rand draws.
  EXPECT_EQ(elements(rand({4, 6}, dtype, &c)), elements(contiguous));
}

INSTANTIATE_TEST_SUITE_P(Ops, RandomTest, ::testing::Values(DType::Float32, DType::Float64),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(Random, RandintCoversTheRangeUniformly) {
  Generator generator(9);
  Tensor x = randint(-3, 5, {kSamples}, &generator);
  EXPECT_EQ(x.dtype(), DType::Int64);
  std::vector<std::int64_t> counts(8, 0);
  for (std::int64_t v : x.to_vector<std::int64_t>()) {
    ASSERT_TRUE(v >= -3 && v < 5) << v;
    ++counts[static_cast<std::size_t>(v + 3)];
  }
  // Each count is Binomial(n, 1/8): standard deviation sqrt(n p (1 - p)).
  const double expected = kSamples / 8.0;
  const double sd = std::sqrt(kSamples * (1.0 / 8) * (7.0 / 8));
  for (std::int64_t count : counts) EXPECT_NEAR(static_cast<double>(count), expected, 5 * sd);
  // A range wider than int64 can hold as a difference still works.
  const std::int64_t huge = std::int64_t{1} << 62;
  for (std::int64_t v : randint(-huge, huge, {100}, &generator).to_vector<std::int64_t>()) {
    EXPECT_TRUE(v >= -huge && v < huge);
  }
  EXPECT_EQ(randint(0, 1, {5}).to_vector<std::int64_t>(), std::vector<std::int64_t>(5, 0));
}

TEST(Random, FactoriesTakeShapeDtypeAndGradFromTheOptions) {
  Tensor x = rand({2, 0, 3});
  EXPECT_EQ(x.sizes(), IntArrayRef({2, 0, 3}));
  EXPECT_EQ(x.dtype(), DType::Float32);
  EXPECT_EQ(randn({}, DType::Float64).dim(), 0);
  EXPECT_TRUE(randn({2}, TensorOptions().requires_grad(true)).requires_grad());
  EXPECT_TRUE(rand({2}).device() == kCPU);
}

TEST(Random, DropoutKeepsTheExpectationAndZeroesAboutP) {
  const double p = 0.3;
  Tensor x = random_tensor({kSamples}, DType::Float64, 1.0, 3.0, 3);
  manual_seed(11);
  Tensor y = dropout(x, p, true);
  const std::vector<double> xs = elements(x), ys = elements(y);
  std::int64_t zeroed = 0;
  double sum_x = 0, sum_y = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (ys[i] == 0.0) {
      ++zeroed;
    } else {
      // Kept elements are x * (1 / (1 - p)) in float64: a couple of ulps from x / (1 - p).
      EXPECT_NEAR(ys[i], xs[i] / (1 - p), 1e-12 * ys[i]);
    }
    sum_x += xs[i];
    sum_y += ys[i];
  }
  // Zeroed count ~ Binomial(n, p).
  EXPECT_NEAR(static_cast<double>(zeroed), p * kSamples, 5 * std::sqrt(kSamples * p * (1 - p)));
  // y_i = x_i b_i / (1 - p) with b_i ~ Bernoulli(1 - p): E[y_i] = x_i, and the sum's standard
  // deviation is sqrt(sum x_i^2 p / (1 - p)) <= 3 sqrt(n p / (1 - p)) since x_i < 3.
  EXPECT_NEAR(sum_y, sum_x, 5 * 3 * std::sqrt(kSamples * p / (1 - p)));
}

// Keeps the outputs of the last op it saw (dropout's mask is not returned to the user).
struct LastOutputs final : OpObserver {
  void on_op(const OpCall&, const OpOutputs& outputs) override {
    seen.assign(outputs.span().begin(), outputs.span().end());
  }
  std::vector<Tensor> seen;
};

TEST(Random, DropoutMaskMatchesTheOutputAndIsReproducible) {
  Tensor x = non_contiguous(random_tensor({6, 7}, DType::Float32, 1.0, 2.0, 4));
  Generator a(3), b(3);
  LastOutputs last;
  Tensor first;
  {
    OpObserverGuard guard(&last);
    first = dropout(x, 0.5, true, &a);
  }
  ASSERT_EQ(last.seen.size(), 2u);
  const Tensor& mask = last.seen[1];
  EXPECT_EQ(mask.dtype(), DType::Bool);
  EXPECT_EQ(mask.sizes(), x.sizes());
  const std::vector<double> xs = elements(x), ys = elements(first), keep = elements(mask);
  for (std::size_t i = 0; i < xs.size(); ++i) {
    // Exact: x * 2 in float32 is exact.
    EXPECT_EQ(ys[i], keep[i] != 0.0 ? xs[i] * 2 : 0.0) << i;
  }
  EXPECT_EQ(elements(dropout(x, 0.5, true, &b)), ys);  // same seed, same mask
  EXPECT_NE(elements(dropout(x, 0.5, true, &a)), ys);  // the generator moved on
  EXPECT_EQ(first.dtype(), DType::Float32);
}

TEST(Random, DropoutInEvalOrWithPZeroReturnsTheInput) {
  Tensor x = random_tensor({3, 4});
  EXPECT_TRUE(dropout(x, 0.5, false).impl() == x.impl());
  EXPECT_TRUE(dropout(x, 0.0, true).impl() == x.impl());
  EXPECT_EQ(dropout(zeros({0, 4}), 0.5).numel(), 0);
}

TEST(Random, ErrorsNameOpShapesAndDtypes) {
  EXPECT_THAT(error_of([] {
                dropout(zeros({2, 3}), 1.0);
              }),
              HasSubstr("dropout: expected a probability p in [0, 1), but got 1 (inputs: "
                        "float32[2, 3])"));
  EXPECT_THAT(error_of([] { dropout(zeros({2}), -0.1, false); }),
              HasSubstr("dropout: expected a probability p in [0, 1), but got -0.1"));
  EXPECT_THAT(error_of([] { dropout(zeros({2}, DType::Int64), 0.5); }),
              HasSubstr("dropout: expected a floating-point input, but got int64 (inputs: "
                        "int64[2])"));
  EXPECT_THAT(error_of([] { rand({2}, DType::Int64); }),
              HasSubstr("rand: expected a floating-point dtype, but got int64; use randint"));
  EXPECT_THAT(error_of([] {
                randn({2, -1});
              }),
              HasSubstr("randn: sizes must be non-negative, but got [2, -1]"));
  EXPECT_THAT(error_of([] { randint(3, 3, {2}); }),
              HasSubstr("randint: expected low < high, but got low = 3 and high = 3"));
}

Stream capture_stream() {
  static const Stream stream = new_stream(kCPU);
  return stream;
}

TEST(RandomCaptureTest, AGeneratorNotServingTheCaptureIsRefused) {
  Generator own(1);
  Tensor x = zeros({4});
  DeviceGraph graph(kCPU);
  StreamGuard guard(capture_stream());
  graph.begin_capture(capture_stream());
  const std::string message = error_of([&] { normal_(x, 0.0, 1.0, &own); });
  EXPECT_NO_THROW(uniform_(x));  // the default generator serves the capture
  graph.end_capture();
  EXPECT_THAT(message, HasSubstr("normal_: the stream is capturing a graph, but the generator "
                                 "given is not serving the capture"));
  graph.replay();
  for (float v : x.to_vector<float>()) EXPECT_TRUE(v >= 0.0f && v < 1.0f);
}

TEST(RandomCaptureTest, EagerDrawsFromTheDefaultGeneratorDuringACaptureElsewhereAreRefused) {
  DeviceGraph graph(kCPU);
  {
    StreamGuard guard(capture_stream());
    graph.begin_capture(capture_stream());
  }
  // The current stream is the default one again, which is not capturing.
  const std::string message = error_of([] { (void)rand({4}); });
  Generator own(2);
  EXPECT_NO_THROW((void)rand({4}, {}, &own));
  {
    StreamGuard guard(capture_stream());
    graph.end_capture();
  }
  EXPECT_THAT(message, HasSubstr("rand: a graph capture on another stream holds the default "
                                 "generator of this device"));
  EXPECT_NO_THROW((void)rand({4}));  // after the capture
}

}  // namespace
}  // namespace grove::ops
