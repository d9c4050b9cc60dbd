// Reductions against naive references in long double: sum, mean and var over every dim set
// (one, several, negative, all, none of a 0-d tensor), keepdim on and off, contiguous,
// non-contiguous, transposed and expanded inputs, size-1 and size-0 dims, float32 and float64;
// max and argmax with ties and NaN; integer sums; accuracy on long rows; capture; error paths.
#include "ops/reduce.h"

#include "core/device_graph.h"
#include "op_test_util.h"

namespace grove::ops {
namespace {

using testing::element;
using testing::error_of;
using testing::expect_close;
using ::testing::HasSubstr;
using testing::non_contiguous;
using testing::random_integers;
using testing::random_tensor;
using testing::relative_tolerance;

// --- the reference: elements grouped by output position ---

// Per input dim: reduced or not (dims empty: all), as the ops define it.
std::vector<bool> reduced_dims(std::int64_t ndim, const std::vector<std::int64_t>& dims) {
  std::vector<bool> reduced(static_cast<std::size_t>(ndim), dims.empty());
  for (std::int64_t d : dims) {
    if (ndim > 0) reduced[static_cast<std::size_t>(d < 0 ? d + ndim : d)] = true;
  }
  return reduced;
}

// groups[o] holds the input elements reduced into output o (row-major output order), each
// group in row-major order of the input.
std::vector<std::vector<double>> groups(const Tensor& x, const std::vector<std::int64_t>& dims) {
  const std::vector<bool> reduced = reduced_dims(x.dim(), dims);
  std::int64_t outputs = 1;
  for (std::int64_t d = 0; d < x.dim(); ++d) {
    if (!reduced[static_cast<std::size_t>(d)]) outputs *= x.size(d);
  }
  std::vector<std::vector<double>> result(static_cast<std::size_t>(outputs));
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    std::int64_t rest = i, out = 0, out_stride = 1;
    for (std::int64_t d = x.dim() - 1; d >= 0; --d) {
      const std::int64_t coordinate = rest % x.size(d);
      rest /= x.size(d);
      if (reduced[static_cast<std::size_t>(d)]) continue;
      out += coordinate * out_stride;
      out_stride *= x.size(d);
    }
    result[static_cast<std::size_t>(out)].push_back(element(x, i));
  }
  return result;
}

std::vector<std::int64_t> reduced_shape(const Tensor& x, const std::vector<std::int64_t>& dims,
                                        bool keepdim) {
  const std::vector<bool> reduced = reduced_dims(x.dim(), dims);
  std::vector<std::int64_t> shape;
  for (std::int64_t d = 0; d < x.dim(); ++d) {
    if (!reduced[static_cast<std::size_t>(d)])
      shape.push_back(x.size(d));
    else if (keepdim)
      shape.push_back(1);
  }
  return shape;
}

long double reference_sum(const std::vector<double>& values) {
  long double total = 0;
  for (double v : values) total += v;
  return total;
}
double reference_mean(const std::vector<double>& values) {
  return static_cast<double>(reference_sum(values) / static_cast<long double>(values.size()));
}
double reference_var(const std::vector<double>& values, double correction) {
  const long double mean = reference_sum(values) / static_cast<long double>(values.size());
  long double squares = 0;
  for (double v : values) squares += (v - mean) * (v - mean);
  const long double divisor = std::max<long double>(0, values.size() - correction);
  return static_cast<double>(squares / divisor);
}

// --- sum, mean, var ---

struct SumOp {
  const char* name;
  Tensor (*op)(const Tensor&, IntArrayRef, bool);
  double (*reference)(const std::vector<double>&);
};

const SumOp kSumOps[] = {
    {"sum", [](const Tensor& x, IntArrayRef d, bool k) { return sum(x, d, k); },
     [](const std::vector<double>& v) { return static_cast<double>(reference_sum(v)); }},
    {"mean", [](const Tensor& x, IntArrayRef d, bool k) { return mean(x, d, k); }, reference_mean},
    {"var", [](const Tensor& x, IntArrayRef d, bool k) { return var(x, d, true, k); },
     [](const std::vector<double>& v) { return reference_var(v, 1.0); }},
    {"var_biased", [](const Tensor& x, IntArrayRef d, bool k) { return var(x, d, false, k); },
     [](const std::vector<double>& v) { return reference_var(v, 0.0); }},
};

struct DimsCase {
  const char* name;
  std::vector<std::int64_t> sizes;
  std::vector<std::int64_t> dims;  // empty: every dim
};

const DimsCase kDimsCases[] = {
    {"all_2d", {3, 4}, {}},
    {"last", {3, 5}, {-1}},
    {"first", {6, 5}, {0}},  // the column strategy
    {"middle", {2, 3, 4}, {1}},
    {"outer_two", {2, 3, 4}, {0, 2}},
    {"negative_unordered", {2, 3, 4}, {-1, -3}},
    {"every_dim_listed", {4, 5, 6}, {2, 0, 1}},
    {"size1_reduced", {3, 1, 4}, {1}},
    {"size1_kept", {1, 4}, {1}},
    {"size0_reduced", {3, 0, 2}, {1}},  // sum 0, mean and var NaN
    {"size0_kept", {0, 4}, {1}},
    {"scalar", {}, {}},
    {"scalar_dim", {}, {-1}},
    {"long_row", {2, 5000}, {1}},
    {"long_columns", {3000, 70}, {0}},  // more outputs than one chunk of the column strategy
};

// Readable parameters in failure messages (gtest prints structs as bytes otherwise).
void PrintTo(const SumOp& op, std::ostream* out) {
  *out << op.name;
}
void PrintTo(const DimsCase& c, std::ostream* out) {
  *out << c.name << ": sizes " << IntArrayRef(c.sizes) << ", dims " << IntArrayRef(c.dims);
}

class ReduceSumTest : public ::testing::TestWithParam<std::tuple<SumOp, DimsCase, DType, bool>> {};

void check_sum_like(const SumOp& op, const Tensor& x, const std::vector<std::int64_t>& dims,
                    bool keepdim, const std::string& layout) {
  Tensor output = op.op(x, dims, keepdim);
  EXPECT_EQ(output.sizes(), IntArrayRef(reduced_shape(x, dims, keepdim))) << layout;
  EXPECT_EQ(output.dtype(), x.dtype()) << layout;
  EXPECT_TRUE(output.is_contiguous()) << layout;
  std::vector<double> expected;
  for (const auto& group : groups(x, dims)) expected.push_back(op.reference(group));
  // Sums accumulate in double with compensation, so the results are the exact values rounded
  // to the dtype: float32 within a few ulps (1e-5), float64 within 1e-12. The absolute floor
  // only matters for results that cancel to about zero.
  const double rtol = relative_tolerance(x.dtype());
  expect_close(output, expected, rtol, rtol * 1e-3, str(op.name, " ", layout));
}

TEST_P(ReduceSumTest, MatchesReferenceInEveryLayout) {
  const auto& [op, c, dtype, keepdim] = GetParam();
  Tensor base = random_tensor(c.sizes, dtype, -2.0, 2.0, 11);
  check_sum_like(op, base, c.dims, keepdim, "contiguous");
  check_sum_like(op, non_contiguous(base), c.dims, keepdim, "non-contiguous");
  if (c.sizes.size() >= 2) {
    // The same shape laid out with the dims reversed in memory.
    std::vector<std::int64_t> reversed(c.sizes.rbegin(), c.sizes.rend());
    std::vector<std::int64_t> order;
    for (std::int64_t d = static_cast<std::int64_t>(c.sizes.size()) - 1; d >= 0; --d) {
      order.push_back(d);
    }
    check_sum_like(op, random_tensor(reversed, dtype, -2.0, 2.0, 12).permute(order), c.dims,
                   keepdim, "transposed");
    std::vector<std::int64_t> one_row(c.sizes);
    one_row[0] = 1;
    check_sum_like(op, random_tensor(one_row, dtype, -2.0, 2.0, 13).expand(c.sizes), c.dims,
                   keepdim, "expanded");
  }
}

INSTANTIATE_TEST_SUITE_P(
    Ops, ReduceSumTest,
    ::testing::Combine(::testing::ValuesIn(kSumOps), ::testing::ValuesIn(kDimsCases),
                       ::testing::Values(DType::Float32, DType::Float64), ::testing::Bool()),
    [](const auto& info) {
      return str(std::get<0>(info.param).name, "_", std::get<1>(info.param).name, "_",
                 dtype_name(std::get<2>(info.param)), std::get<3>(info.param) ? "_keepdim" : "");
    });

TEST(ReduceSum, FullReductionsAreZeroDimensional) {
  Tensor x = random_tensor({3, 4, 5}, DType::Float64, -1, 1, 3);
  const std::vector<double> values = testing::elements(x);
  EXPECT_EQ(sum(x).dim(), 0);
  EXPECT_NEAR(sum(x).item<double>(), static_cast<double>(reference_sum(values)), 1e-12);
  EXPECT_NEAR(mean(x).item<double>(), reference_mean(values), 1e-12);
  EXPECT_NEAR(var(x).item<double>(), reference_var(values, 1.0), 1e-12);
  EXPECT_NEAR(var(x, {}, false).item<double>(), reference_var(values, 0.0), 1e-12);
  const std::vector<std::int64_t> ones = {1, 1, 1};
  EXPECT_EQ(sum(x, {}, true).sizes(), IntArrayRef(ones));  // empty dims: every dim
}

TEST(ReduceSum, Float32RowsOfAMillionStayAccurate) {
  // A float accumulator would be off by about 1% here; the double one is exact to rounding.
  Tensor x = full({2, 1 << 20}, 0.1f);
  const double expected = static_cast<double>(0.1f) * (1 << 20);
  expect_close(sum(x, {1}), {expected, expected}, 1e-7);
  expect_close(mean(x, {-1}), {static_cast<double>(0.1f), static_cast<double>(0.1f)}, 1e-7);
  expect_close(sum(x.t().contiguous(), {0}), {expected, expected}, 1e-7);  // column strategy
}

TEST(ReduceSum, Float64KeepsSmallTermsThatANaiveSumDrops) {
  // 1 + 1e5 * 1e-16: each 1e-16 is below half an ulp of 1, so a naive sum returns exactly 1.
  std::vector<double> values(100001, 1e-16);
  values[0] = 1.0;
  expect_close(sum(from_vector(values)), {1.0 + 1e-11}, 1e-14);
}

TEST(ReduceSum, InfinitiesAndNanFollowIeee) {
  // The compensation term turns NaN on infinite inputs; the plain sum must take over.
  const float inf = INFINITY;
  Tensor x =
      from_vector(std::vector<float>{inf, 1, 2, 3, -inf, 1, NAN, 1, 2, inf, -inf, 1}, {4, 3});
  for (const Tensor& input : {x, x.t().contiguous().t()}) {
    const std::vector<float> result = sum(input, {1}).to_vector<float>();
    EXPECT_EQ(result[0], inf);
    EXPECT_EQ(result[1], -inf);
    EXPECT_TRUE(std::isnan(result[2]));
    EXPECT_TRUE(std::isnan(result[3]));  // inf - inf
  }
  Tensor long_row = full({1, 100}, 1.0);
  long_row.select(1, 50).fill_(inf);
  EXPECT_EQ(sum(long_row, {1}).item<double>(), inf);  // through the eight-lane dense path
}

TEST(ReduceSum, IntegerSumsAreExactAndInt64) {
  Tensor x = random_integers({5, 7}, -1000, 1000, 4);
  const auto values = x.to_vector<std::int64_t>();
  std::vector<std::int64_t> rows(5, 0);
  for (std::size_t i = 0; i < values.size(); ++i) rows[i / 7] += values[i];
  EXPECT_EQ(sum(x, {1}).dtype(), DType::Int64);
  EXPECT_EQ(sum(x, {1}).to_vector<std::int64_t>(), rows);
  EXPECT_EQ(sum(x.to(DType::Int32), {-1}).dtype(), DType::Int64);  // as PyTorch
  EXPECT_EQ(sum(non_contiguous(x.to(DType::Int32)), {-1}).to_vector<std::int64_t>(), rows);
  Tensor flags = from_vector(std::vector<bool>{true, false, true, true});
  EXPECT_EQ(sum(flags).dtype(), DType::Int64);
  EXPECT_EQ(sum(flags).item<std::int64_t>(), 3);
  EXPECT_EQ(sum(zeros({0}, DType::Int64)).item<std::int64_t>(), 0);
}

TEST(ReduceSum, CapturedReductionsReplayOnNewValues) {
  Tensor x = random_tensor({4, 6}, DType::Float32, -1, 1, 5);
  const Stream stream = new_stream(kCPU);
  DeviceGraph graph(kCPU);
  Tensor rows, columns;
  {
    StreamGuard guard(stream);
    graph.begin_capture(stream);
    rows = mean(x, {1});
    columns = var(x, {0});
    graph.end_capture();
  }
  x.copy_(random_tensor({4, 6}, DType::Float32, -1, 1, 6));
  graph.replay();
  std::vector<double> expected_rows, expected_columns;
  for (const auto& group : groups(x, {1})) expected_rows.push_back(reference_mean(group));
  for (const auto& group : groups(x, {0})) expected_columns.push_back(reference_var(group, 1.0));
  expect_close(rows, expected_rows, 1e-5);
  expect_close(columns, expected_columns, 1e-5);
}

// --- max, argmax ---

struct MaxCase {
  const char* name;
  std::vector<std::int64_t> sizes;
  std::int64_t dim;
};

const MaxCase kMaxCases[] = {
    {"last", {4, 9}, -1},    {"first", {9, 4}, 0},      {"middle", {2, 5, 3}, 1},
    {"size1", {3, 1, 4}, 1}, {"size0_kept", {0, 4}, 1}, {"scalar", {}, 0},
};

void PrintTo(const MaxCase& c, std::ostream* out) {
  *out << c.name << ": sizes " << IntArrayRef(c.sizes) << ", dim " << c.dim;
}

class ReduceMaxTest : public ::testing::TestWithParam<std::tuple<MaxCase, DType, bool>> {};

void check_max(const Tensor& x, std::int64_t dim, bool keepdim, const std::string& layout) {
  const MaxResult result = max(x, dim, keepdim);
  const Tensor positions = argmax(x, dim, keepdim);
  const std::vector<std::int64_t> shape = reduced_shape(x, {dim}, keepdim);
  EXPECT_EQ(result.values.sizes(), IntArrayRef(shape)) << layout;
  EXPECT_EQ(result.indices.sizes(), IntArrayRef(shape)) << layout;
  EXPECT_EQ(result.values.dtype(), x.dtype()) << layout;
  EXPECT_EQ(result.indices.dtype(), DType::Int64) << layout;
  std::vector<double> values, indices;
  for (const auto& group : groups(x, {dim})) {
    std::size_t best = 0;  // the first maximum
    for (std::size_t i = 1; i < group.size(); ++i) best = group[i] > group[best] ? i : best;
    values.push_back(group[best]);
    indices.push_back(static_cast<double>(best));
  }
  expect_close(result.values, values, 0.0, 0.0, layout);
  expect_close(result.indices, indices, 0.0, 0.0, layout);
  expect_close(positions, indices, 0.0, 0.0, layout);
}

TEST_P(ReduceMaxTest, MatchesReferenceWithTies) {
  const auto& [c, dtype, keepdim] = GetParam();
  // Few distinct values, so most rows have ties and the first position must win.
  Tensor base = random_integers(c.sizes, -3, 3, 8).to(dtype);
  check_max(base, c.dim, keepdim, "contiguous");
  check_max(non_contiguous(base), c.dim, keepdim, "non-contiguous");
  if (c.sizes.size() >= 2)
    check_max(base.transpose(0, -1).contiguous().transpose(0, -1), c.dim, keepdim, "transposed");
}

INSTANTIATE_TEST_SUITE_P(Ops, ReduceMaxTest,
                         ::testing::Combine(::testing::ValuesIn(kMaxCases),
                                            ::testing::Values(DType::Float32, DType::Float64,
                                                              DType::Int64, DType::Int32),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return str(std::get<0>(info.param).name, "_",
                                      dtype_name(std::get<1>(info.param)),
                                      std::get<2>(info.param) ? "_keepdim" : "");
                         });

TEST(ReduceMax, FullMaxAndFlatArgmax) {
  Tensor x = random_tensor({3, 4, 5}, DType::Float32, -1, 1, 9);
  const std::vector<double> values = testing::elements(x);
  const auto best = std::max_element(values.begin(), values.end());
  EXPECT_EQ(max(x).dim(), 0);
  EXPECT_EQ(max(x).item<double>(), *best);
  EXPECT_EQ(argmax(x).item<std::int64_t>(), best - values.begin());
  // The flat position is row-major in the logical shape, whatever the memory layout.
  Tensor transposed = x.transpose(0, 2).contiguous().transpose(0, 2);
  EXPECT_EQ(argmax(transposed).item<std::int64_t>(), best - values.begin());
}

TEST(ReduceMax, NanIsTheMaximumAndTheFirstNanWins) {
  Tensor x = from_vector(std::vector<float>{1, NAN, 5, NAN, 2, 7, 3, 1}, {2, 4});
  const MaxResult result = max(x, 1);
  EXPECT_TRUE(std::isnan(result.values.to_vector<float>()[0]));
  EXPECT_EQ(result.values.to_vector<float>()[1], 7.0f);
  EXPECT_EQ(result.indices.to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 1}));
  EXPECT_EQ(argmax(x).item<std::int64_t>(), 1);
}

// --- errors ---

TEST(ReduceErrors, MeanAndVarNeedFloatingPoint) {
  Tensor x = from_vector(std::vector<std::int64_t>{1, 2});
  std::string message = error_of([&] { mean(x); });
  EXPECT_THAT(message, HasSubstr("mean: expected a floating-point input, but got int64"));
  EXPECT_THAT(message, HasSubstr("(inputs: int64[2])"));
  EXPECT_THAT(error_of([&] { var(x, {0}); }), HasSubstr("var: expected a floating-point input"));
  EXPECT_THAT(error_of([] {
                argmax(from_vector(std::vector<bool>{true, false}));
              }),
              HasSubstr("argmax: expected a numeric input, but got bool"));
}

TEST(ReduceErrors, DimsOutOfRangeOrRepeated) {
  Tensor x = zeros({2, 3});
  std::string message = error_of([&] { sum(x, {2}); });
  EXPECT_THAT(message, HasSubstr("sum: dimension 2 is out of range for a 2-d input (expected a "
                                 "value in [-2, 1])"));
  EXPECT_THAT(message, HasSubstr("(inputs: float32[2, 3])"));
  EXPECT_THAT(error_of([&] {
                mean(x, {1, -1});
              }),
              HasSubstr("mean: dimension -1 appears more than once in dims [1, -1]"));
  EXPECT_THAT(error_of([&] { max(x, -3); }), HasSubstr("max: dimension -3 is out of range"));
  EXPECT_THAT(error_of([&] { argmax(zeros({}), 1); }),
              HasSubstr("argmax: dimension 1 is out of range for a 0-d input"));
  EXPECT_THAT(error_of([&] { var(x, {0, 0}); }), HasSubstr("var: dimension 0 appears more"));
}

TEST(ReduceErrors, MaxOfNothingIsAnError) {
  std::string message = error_of([] { max(zeros({3, 0}), 1); });
  EXPECT_THAT(message, HasSubstr("max: cannot reduce over dimension 1 of size 0"));
  EXPECT_THAT(message, HasSubstr("(inputs: float32[3, 0])"));
  EXPECT_THAT(error_of([] { max(zeros({0})); }),
              HasSubstr("max: cannot reduce an empty tensor (shape [0])"));
  EXPECT_THAT(error_of([] { argmax(zeros({2, 0})); }), HasSubstr("argmax: cannot reduce an empty"));
}

}  // namespace
}  // namespace grove::ops
