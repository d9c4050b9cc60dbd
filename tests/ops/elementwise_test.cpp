// Elementwise ops against naive double references: every unary and binary op on float32 and
// float64, contiguous, non-contiguous, broadcast, size-1 and size-0 shapes; scalar forms;
// comparisons, where, masked_fill, clamp; gelu_backward against its derivative formula and by
// central differences against gelu; and the error paths.
#include "ops/elementwise.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "op_test_util.h"

namespace grove::ops {
namespace {

using testing::broadcast_index;
using testing::element;
using testing::elements;
using testing::error_of;
using testing::expect_close;
using testing::expect_gradient;
using ::testing::HasSubstr;
using testing::non_contiguous;
using testing::random_tensor;
using testing::relative_tolerance;

// --- unary ---

struct UnaryCase {
  const char* name;
  Tensor (*op)(const Tensor&);
  double (*reference)(double);
  double low, high;  // input range (inside the function's domain)
};

double reference_gelu(double x) {
  return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}
double reference_gelu_tanh(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

const UnaryCase kUnaryCases[] = {
    {"neg", neg, [](double x) { return -x; }, -3, 3},
    {"exp", exp, [](double x) { return std::exp(x); }, -3, 3},
    {"log", log, [](double x) { return std::log(x); }, 0.1, 5},
    {"sqrt", sqrt, [](double x) { return std::sqrt(x); }, 0.01, 5},
    {"rsqrt", rsqrt, [](double x) { return 1.0 / std::sqrt(x); }, 0.1, 5},
    {"abs", abs, [](double x) { return std::abs(x); }, -3, 3},
    {"tanh", tanh, [](double x) { return std::tanh(x); }, -3, 3},
    {"sigmoid", sigmoid, [](double x) { return 1.0 / (1.0 + std::exp(-x)); }, -6, 6},
    {"relu", relu, [](double x) { return x > 0 ? x : 0.0; }, -3, 3},
    {"gelu", [](const Tensor& x) { return gelu(x); }, reference_gelu, -4, 4},
    {"gelu_tanh", [](const Tensor& x) { return gelu(x, true); }, reference_gelu_tanh, -4, 4},
    {"pow_3", [](const Tensor& x) { return pow(x, 3.0); }, [](double x) { return x * x * x; }, -2,
     2},
    {"pow_half", [](const Tensor& x) { return pow(x, 0.5); }, [](double x) { return std::sqrt(x); },
     0.1, 4},
    {"clamp", [](const Tensor& x) { return clamp(x, -0.5, 1.0); },
     [](double x) { return std::min(std::max(x, -0.5), 1.0); }, -3, 3},
};

class UnaryTest : public ::testing::TestWithParam<std::tuple<UnaryCase, DType>> {};

void check_unary(const UnaryCase& c, const Tensor& input, const std::string& layout) {
  Tensor output = c.op(input);
  EXPECT_EQ(output.sizes(), input.sizes()) << layout;
  EXPECT_EQ(output.dtype(), input.dtype()) << layout;
  std::vector<double> expected;
  for (double x : elements(input)) expected.push_back(c.reference(x));
  // Values are computed from the input as stored (already rounded to the dtype).
  expect_close(output, expected, relative_tolerance(input.dtype()), 1e-7, str(c.name, " ", layout));
}

TEST_P(UnaryTest, MatchesReferenceInEveryLayout) {
  const auto& [c, dtype] = GetParam();
  Tensor base = random_tensor({3, 4, 5}, dtype, c.low, c.high, 7);
  check_unary(c, base, "contiguous");
  check_unary(c, non_contiguous(base), "non-contiguous");
  check_unary(c, base.transpose(0, 2), "transposed");
  check_unary(c, random_tensor({1, 5}, dtype, c.low, c.high).expand({4, 5}), "expanded");
  check_unary(c, random_tensor({}, dtype, c.low, c.high), "0-d");
  check_unary(c, random_tensor({2, 0, 3}, dtype, c.low, c.high), "size-0");
}

INSTANTIATE_TEST_SUITE_P(Ops, UnaryTest,
                         ::testing::Combine(::testing::ValuesIn(kUnaryCases),
                                            ::testing::Values(DType::Float32, DType::Float64)),
                         testing::CaseAndDtypeName());

TEST(Unary, IntegerFormsOfNegAbsReluClamp) {
  Tensor x = from_vector(std::vector<std::int64_t>{-3, -1, 0, 2, 5});
  EXPECT_EQ(neg(x).to_vector<std::int64_t>(), (std::vector<std::int64_t>{3, 1, 0, -2, -5}));
  EXPECT_EQ(abs(x).to_vector<std::int64_t>(), (std::vector<std::int64_t>{3, 1, 0, 2, 5}));
  EXPECT_EQ(relu(x).to_vector<std::int64_t>(), (std::vector<std::int64_t>{0, 0, 0, 2, 5}));
  EXPECT_EQ(clamp(x, -1, 2).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{-1, -1, 0, 2, 2}));
}

TEST(Unary, MathOnIntegersIsAClearError) {
  Tensor x = from_vector(std::vector<std::int64_t>{1, 2});
  const std::string message = error_of([&] { exp(x); });
  EXPECT_THAT(message, HasSubstr("exp: expected a floating-point tensor, but got int64"));
  EXPECT_THAT(message, HasSubstr("(inputs: int64[2])"));
}

TEST(Unary, NanPropagatesThroughReluAndClamp) {
  Tensor x = from_vector(std::vector<float>{NAN, -1.0f});
  EXPECT_TRUE(std::isnan(relu(x).to_vector<float>()[0]));
  EXPECT_TRUE(std::isnan(clamp(x, 0, 1).to_vector<float>()[0]));
}

// --- binary ---

struct BinaryCase {
  const char* name;
  Tensor (*op)(const Tensor&, const Tensor&);
  Tensor (*scalar_op)(const Tensor&, const Scalar&);  // null if there is no scalar form
  double (*reference)(double, double);
  bool comparison;
};

const BinaryCase kBinaryCases[] = {
    {"add", add, add, [](double a, double b) { return a + b; }, false},
    {"sub", sub, sub, [](double a, double b) { return a - b; }, false},
    {"mul", mul, mul, [](double a, double b) { return a * b; }, false},
    {"div", div, div, [](double a, double b) { return a / b; }, false},
    {"maximum", maximum, nullptr, [](double a, double b) { return std::max(a, b); }, false},
    {"minimum", minimum, nullptr, [](double a, double b) { return std::min(a, b); }, false},
    {"eq", eq, eq, [](double a, double b) { return a == b ? 1.0 : 0.0; }, true},
    {"ne", ne, ne, [](double a, double b) { return a != b ? 1.0 : 0.0; }, true},
    {"lt", lt, lt, [](double a, double b) { return a < b ? 1.0 : 0.0; }, true},
    {"le", le, le, [](double a, double b) { return a <= b ? 1.0 : 0.0; }, true},
    {"gt", gt, gt, [](double a, double b) { return a > b ? 1.0 : 0.0; }, true},
    {"ge", ge, ge, [](double a, double b) { return a >= b ? 1.0 : 0.0; }, true},
};

class BinaryTest : public ::testing::TestWithParam<std::tuple<BinaryCase, DType>> {};

void check_binary(const BinaryCase& c, const Tensor& a, const Tensor& b,
                  const std::string& layout) {
  Tensor output = c.op(a, b);
  EXPECT_EQ(output.dtype(), c.comparison ? DType::Bool : a.dtype()) << layout;
  std::vector<double> expected(static_cast<std::size_t>(output.numel()));
  for (std::int64_t i = 0; i < output.numel(); ++i) {
    expected[static_cast<std::size_t>(i)] =
        c.reference(element(a, broadcast_index(a.sizes(), output.sizes(), i)),
                    element(b, broadcast_index(b.sizes(), output.sizes(), i)));
  }
  expect_close(output, expected, relative_tolerance(a.dtype()), 1e-7, str(c.name, " ", layout));
}

TEST_P(BinaryTest, MatchesReferenceWithBroadcastingAndLayouts) {
  const auto& [c, dtype] = GetParam();
  // Comparisons need ties: draw from a few integers.
  auto input = [&](IntArrayRef sizes, unsigned seed) {
    Tensor t = random_tensor(sizes, DType::Float64, 0.5, 3.0, seed);
    if (c.comparison) t = t.to(DType::Int64).to(DType::Float64);
    return t.to(dtype);
  };
  Tensor a = input({4, 5}, 1);
  check_binary(c, a, input({4, 5}, 2), "same shape");
  check_binary(c, non_contiguous(a), input({4, 5}, 3).t().contiguous().t().contiguous(),
               "non-contiguous");
  check_binary(c, a.t(), input({5, 4}, 4), "transposed");
  check_binary(c, a, input({5}, 5), "row broadcast");
  check_binary(c, input({4, 1}, 6), input({1, 5}, 7), "outer broadcast");
  check_binary(c, input({2, 1, 3}, 8), input({4, 1}, 9), "rank broadcast");
  check_binary(c, input({}, 10), a, "0-d with 2-d");
  check_binary(c, input({0, 5}, 11), input({1, 5}, 12), "size-0");
}

// Only the ops with a scalar form (maximum and minimum have none).
class BinaryScalarTest : public BinaryTest {};

TEST_P(BinaryScalarTest, ScalarFormMatchesReference) {
  const auto& [c, dtype] = GetParam();
  ASSERT_NE(c.scalar_op, nullptr) << c.name;
  Tensor a = random_tensor({3, 4}, DType::Float64, 0.5, 3.0).to(DType::Int64).to(dtype);
  Tensor output = c.scalar_op(a, 2.0);
  std::vector<double> expected;
  for (double x : elements(a)) expected.push_back(c.reference(x, 2.0));
  expect_close(output, expected, relative_tolerance(dtype), 0.0, c.name);
}

INSTANTIATE_TEST_SUITE_P(Ops, BinaryTest,
                         ::testing::Combine(::testing::ValuesIn(kBinaryCases),
                                            ::testing::Values(DType::Float32, DType::Float64)),
                         testing::CaseAndDtypeName());

std::vector<BinaryCase> cases_with_scalar_form() {
  std::vector<BinaryCase> cases;
  for (const BinaryCase& c : kBinaryCases) {
    if (c.scalar_op != nullptr) cases.push_back(c);
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Ops, BinaryScalarTest,
                         ::testing::Combine(::testing::ValuesIn(cases_with_scalar_form()),
                                            ::testing::Values(DType::Float32, DType::Float64)),
                         testing::CaseAndDtypeName());

// Readable parameters in failure messages (instead of raw bytes).
void PrintTo(const UnaryCase& c, std::ostream* out) {
  *out << c.name;
}
void PrintTo(const BinaryCase& c, std::ostream* out) {
  *out << c.name;
}

TEST(Binary, IntegerArithmeticAndOperators) {
  Tensor a = from_vector(std::vector<std::int64_t>{1, 2, 3});
  Tensor b = from_vector(std::vector<std::int64_t>{10, 20, 30});
  EXPECT_EQ((a + b).to_vector<std::int64_t>(), (std::vector<std::int64_t>{11, 22, 33}));
  EXPECT_EQ((b - a * 2).to_vector<std::int64_t>(), (std::vector<std::int64_t>{8, 16, 24}));
  EXPECT_EQ((-a).to_vector<std::int64_t>(), (std::vector<std::int64_t>{-1, -2, -3}));
  EXPECT_EQ(maximum(a, from_vector(std::vector<std::int64_t>{2, 2, 2})).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{2, 2, 3}));
}

TEST(Binary, MaximumPropagatesNan) {
  Tensor a = from_vector(std::vector<float>{NAN, 1.0f, 2.0f});
  Tensor b = from_vector(std::vector<float>{0.0f, NAN, 1.0f});
  const std::vector<float> result = maximum(a, b).to_vector<float>();
  EXPECT_TRUE(std::isnan(result[0]));
  EXPECT_TRUE(std::isnan(result[1]));
  EXPECT_EQ(result[2], 2.0f);
}

TEST(Binary, ShapesThatCannotBroadcastNameOpShapesAndDtypes) {
  const std::string message = error_of([] { add(zeros({2, 3}), zeros({4})); });
  EXPECT_THAT(message, HasSubstr("add: shapes [2, 3] and [4] cannot be broadcast together"));
  EXPECT_THAT(message, HasSubstr("(inputs: float32[2, 3], float32[4])"));
}

TEST(Binary, DtypeMismatchIsAnError) {
  const std::string message = error_of([] { mul(zeros({2}), zeros({2}, DType::Float64)); });
  EXPECT_THAT(message,
              HasSubstr("mul: expected operands of one dtype, but got float32 and float64"));
}

TEST(Binary, IntegerDivisionAndFloatScalarsOnIntegersAreErrors) {
  Tensor a = from_vector(std::vector<std::int64_t>{4, 6});
  EXPECT_THAT(error_of([&] { div(a, a); }), HasSubstr("div: expected floating-point operands"));
  EXPECT_THAT(error_of([&] { add(a, 0.5); }), HasSubstr("floating-point scalar (0.5)"));
  EXPECT_THAT(error_of([&] { add(zeros({2}, DType::Bool), zeros({2}, DType::Bool)); }),
              HasSubstr("arithmetic on bool tensors is not supported"));
}

TEST(Binary, UndefinedInputIsAnError) {
  EXPECT_THAT(error_of([] { add(zeros({2}), Tensor()); }), HasSubstr("add: input 1 is undefined"));
}

// --- where, masked_fill ---

TEST(Where, SelectsWithBroadcasting) {
  Tensor condition = gt(random_tensor({4, 1}, DType::Float64, -1, 1, 3), 0.0);
  Tensor a = random_tensor({4, 5}, DType::Float64, -1, 1, 4);
  Tensor b = random_tensor({5}, DType::Float64, -1, 1, 5);
  Tensor output = where(condition, non_contiguous(a), b);
  std::vector<double> expected;
  for (std::int64_t i = 0; i < 20; ++i) {
    expected.push_back(element(condition, i / 5) != 0.0 ? element(a, i) : element(b, i % 5));
  }
  expect_close(output, expected, 0.0);
  EXPECT_THAT(error_of([&] { where(a, a, b); }), HasSubstr("where: expected a bool condition"));
}

TEST(MaskedFill, FillsWhereTheMaskIsTrue) {
  Tensor x = random_tensor({3, 4}, DType::Float32, -1, 1, 6);
  Tensor mask = gt(random_tensor({4}, DType::Float32, -1, 1, 7), 0.0);
  Tensor output = masked_fill(x, mask, -1e9);
  std::vector<double> expected;
  for (std::int64_t i = 0; i < 12; ++i) {
    expected.push_back(element(mask, i % 4) != 0.0 ? static_cast<double>(-1e9f) : element(x, i));
  }
  expect_close(output, expected, 0.0);
  EXPECT_THAT(error_of([&] {
                masked_fill(x, zeros({3, 4}), 0);
              }),
              HasSubstr("masked_fill: expected a bool mask, but got float32"));
  EXPECT_THAT(error_of([&] {
                masked_fill(x, gt(zeros({5, 3, 4}), 0.0), 0);
              }),
              HasSubstr("must broadcast to the input's shape [3, 4]"));
}

TEST(Clamp, RejectsInvertedBounds) {
  EXPECT_THAT(error_of([] { clamp(zeros({2}), 2, 1); }),
              HasSubstr("clamp: the lower bound 2 is above the upper bound 1"));
}

// --- derivatives ---

// d gelu / dx: Phi(x) + x phi(x), or for the tanh form, with u = sqrt(2/pi) (x + 0.044715 x^3),
// (1 + tanh u) / 2 + x (1 - tanh^2 u) sqrt(2/pi) (1 + 3 * 0.044715 x^2) / 2.
double reference_gelu_derivative(double x, bool approximate) {
  if (approximate) {
    const double k = std::sqrt(2.0 / M_PI);
    const double t = std::tanh(k * (x + 0.044715 * x * x * x));
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k * (1.0 + 3.0 * 0.044715 * x * x);
  }
  return 0.5 * (1.0 + std::erf(x / std::sqrt(2.0))) +
         x * std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
}

class GeluBackwardTest : public ::testing::TestWithParam<std::tuple<bool, DType>> {};

TEST_P(GeluBackwardTest, MatchesTheDerivativeInEveryLayout) {
  const auto& [approximate, dtype] = GetParam();
  const Tensor x = random_tensor({3, 4, 5}, dtype, -5, 5, 11);
  const Tensor grad = random_tensor({3, 4, 5}, dtype, -2, 2, 12);
  const struct {
    const char* layout;
    Tensor grad, x;
  } layouts[] = {
      {"contiguous", grad, x},
      {"non-contiguous grad", non_contiguous(grad), x},
      {"non-contiguous x", grad, non_contiguous(x)},
      {"transposed", grad.transpose(0, 2).contiguous().transpose(0, 2), x},
      {"0-d", grad.select(0, 1).select(0, 2).select(0, 3),
       x.select(0, 1).select(0, 2).select(0, 3)},
      {"size-0", zeros({2, 0}, dtype), zeros({2, 0}, dtype)},
  };
  for (const auto& layout : layouts) {
    const Tensor out = gelu_backward(layout.grad, layout.x, approximate);
    EXPECT_EQ(out.sizes(), layout.x.sizes()) << layout.layout;
    EXPECT_EQ(out.dtype(), dtype) << layout.layout;
    std::vector<double> expected;
    const std::vector<double> xs = elements(layout.x), gs = elements(layout.grad);
    for (std::size_t i = 0; i < xs.size(); ++i) {
      expected.push_back(gs[i] * reference_gelu_derivative(xs[i], approximate));
    }
    // float32: erf, exp and tanh of float32 arguments, a few ulps each; the derivative crosses
    // zero near x = -0.75, where the absolute floor applies.
    expect_close(out, expected, relative_tolerance(dtype), relative_tolerance(dtype),
                 str(layout.layout, approximate ? " tanh" : " erf"));
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, GeluBackwardTest,
                         ::testing::Combine(::testing::Bool(),
                                            ::testing::Values(DType::Float32, DType::Float64)),
                         [](const auto& info) {
                           return str(std::get<0>(info.param) ? "tanh_" : "erf_",
                                      dtype_name(std::get<1>(info.param)));
                         });

TEST(GeluBackward, IsTheDerivativeOfGelu) {
  const Tensor x = random_tensor({4, 6}, DType::Float64, -4, 4, 13);
  const Tensor grad = random_tensor({4, 6}, DType::Float64, -2, 2, 14);
  for (const bool approximate : {false, true}) {
    expect_gradient(
        gelu_backward(grad, x, approximate), [&](const Tensor& t) { return gelu(t, approximate); },
        x, grad, approximate ? "gelu tanh" : "gelu erf");
  }
}

TEST(GeluBackward, ShapeAndDtypeErrors) {
  EXPECT_THAT(error_of([] {
                gelu_backward(zeros({3}), zeros({2, 3}));
              }),
              HasSubstr("gelu_backward: expected grad of the input's shape [2, 3], but got [3] (a "
                        "backward op does not broadcast) (inputs: float32[3], float32[2, 3])"));
  EXPECT_THAT(error_of([] { gelu_backward(zeros({2}, DType::Float64), zeros({2})); }),
              HasSubstr("gelu_backward: expected grad of the input's dtype float32, but got "
                        "float64"));
  EXPECT_THAT(error_of([] { gelu_backward(zeros({2}, DType::Int64), zeros({2}, DType::Int64)); }),
              HasSubstr("gelu_backward: expected a floating-point input, but got int64"));
}

// relu_backward(g, y) passes g where y > 0 and gives +0 elsewhere; a NaN y passes g (NaN <= 0
// is false), as the masked_fill(g, y <= 0, 0) it replaced did. Strided operands too.
TEST(ReluBackward, PassesTheGradientWhereTheOutputIsPositive) {
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    const Tensor y =
        from_vector(std::vector<double>{2.0, 0.0, -0.0, -3.0, NAN, INFINITY, 1e-30, -1e-30})
            .to(dtype);
    const Tensor g =
        from_vector(std::vector<double>{1.5, 2.5, 3.5, 4.5, 5.5, -6.5, 7.5, 8.5}).to(dtype);
    const std::vector<double> expected = {1.5, 0.0, 0.0, 0.0, 5.5, -6.5, 7.5, 0.0};
    const Tensor out = relu_backward(g, y);
    EXPECT_EQ(out.dtype(), dtype);
    const std::vector<double> got = elements(out);
    ASSERT_EQ(got.size(), expected.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i], expected[i]) << dtype_name(dtype) << " element " << i;
      if (expected[i] == 0.0) {
        EXPECT_FALSE(std::signbit(got[i])) << "element " << i << ": +0";
      }
    }
    // A transposed gradient against a contiguous y: the strided path.
    const Tensor y2 = random_tensor({5, 7}, dtype, -1, 1, 3);
    const Tensor g2 = random_tensor({7, 5}, dtype, -1, 1, 4).transpose(0, 1);
    const std::vector<double> ys = elements(y2), gs = elements(g2);
    const std::vector<double> outs = elements(relu_backward(g2, y2));
    for (std::size_t i = 0; i < ys.size(); ++i) {
      EXPECT_EQ(outs[i], ys[i] <= 0 ? 0.0 : gs[i]) << "strided element " << i;
    }
  }
}

TEST(ReluBackward, IsTheDerivativeOfRelu) {
  const Tensor x = random_tensor({4, 6}, DType::Float64, -4, 4, 15);
  const Tensor grad = random_tensor({4, 6}, DType::Float64, -2, 2, 16);
  expect_gradient(
      relu_backward(grad, relu(x)), [](const Tensor& t) { return relu(t); }, x, grad, "relu");
}

TEST(ReluBackward, ShapeAndDtypeErrors) {
  EXPECT_THAT(error_of([] {
                relu_backward(zeros({3}), zeros({2, 3}));
              }),
              HasSubstr("relu_backward: expected grad of the input's shape [2, 3], but got [3]"));
  EXPECT_THAT(error_of([] { relu_backward(zeros({2}, DType::Int64), zeros({2}, DType::Int64)); }),
              HasSubstr("relu_backward: expected a floating-point input, but got int64"));
}

}  // namespace
}  // namespace grove::ops

namespace grove::ops {
namespace {

// Dense elementwise ops of 32K elements or more are split over the OpenMP threads
// (kMinParallelElements in ops/cpu/elementwise.cpp). Each element depends on itself alone, so
// the result must equal, bit for bit, the same op run on pieces too small to be split, whatever
// the thread count.
TEST(ElementwiseThreads, SplitLoopsEqualUnsplitOnesBitForBit) {
  const std::int64_t n = 100003;  // not a multiple of the chunk grain
  const Tensor x = random_tensor({n}, DType::Float32, -4.0, 4.0, 41);
  const Tensor y = random_tensor({n}, DType::Float32, -4.0, 4.0, 42);
  const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&, const Tensor&)>>>
      cases = {
          {"add", [](const Tensor& a, const Tensor& b) { return add(a, b); }},
          {"mul by a scalar", [](const Tensor& a, const Tensor&) { return mul(a, 0.37); }},
          {"gelu", [](const Tensor& a, const Tensor&) { return gelu(a); }},
          {"gelu_backward", [](const Tensor& a, const Tensor& b) { return gelu_backward(b, a); }},
          {"relu_backward", [](const Tensor& a, const Tensor& b) { return relu_backward(b, a); }},
          {"exp", [](const Tensor& a, const Tensor&) { return exp(a); }},
      };
  for (const auto& [name, op] : cases) {
    const std::vector<double> whole = elements(op(x, y));
    std::vector<double> pieces;
    for (std::int64_t start = 0; start < n; start += 1000) {
      const std::int64_t end = std::min(n, start + 1000);
      const std::vector<double> piece =
          elements(op(x.slice(0, start, end).clone(), y.slice(0, start, end).clone()));
      pieces.insert(pieces.end(), piece.begin(), piece.end());
    }
    EXPECT_EQ(whole, pieces) << name;
  }
}

}  // namespace
}  // namespace grove::ops
