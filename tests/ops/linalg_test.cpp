// matmul, bmm and linear against naive triple loops in double: every rank combination of matmul,
// broadcast and expanded batch dims, transposed and strided operands (read in place or copied
// first), size-1 and size-0 dims (K = 0 gives zeros), products large enough to take the threaded
// paths, a product captured into a graph and replayed; and every error path.
#include "ops/linalg.h"

#include <omp.h>

#include "core/device_graph.h"
#include "op_test_util.h"
#include "ops/elementwise.h"

namespace grove::ops {
namespace {

using testing::elements;
using testing::error_of;
using testing::expect_close;
using ::testing::HasSubstr;
using testing::non_contiguous;
using testing::random_tensor;
using testing::relative_tolerance;

// Tolerance of a length-K dot product. Summation order differs between Eigen's blocked GEMM and
// the reference, and each of the K additions may round by half an ulp of the running sum. With
// random signs the sum's own size grows like sqrt(K) |a| |b|, so an element near zero (from
// cancellation) cannot be held to a relative bound of its own value: the error is measured
// against the scale sqrt(K) * max|a| * max|b| of a typical element instead, at the dtype's
// usual relative tolerance (float32 1e-5, float64 1e-12, each far above the expected rounding).
double dot_floor(const std::vector<double>& a, const std::vector<double>& b, std::int64_t k,
                 DType dtype) {
  double max_a = 0.0, max_b = 0.0;
  for (double v : a) max_a = std::max(max_a, std::abs(v));
  for (double v : b) max_b = std::max(max_b, std::abs(v));
  return relative_tolerance(dtype) * std::sqrt(static_cast<double>(std::max<std::int64_t>(k, 1))) *
         std::max(max_a * max_b, 1e-30);
}

DimVector broadcast_sizes(IntArrayRef a, IntArrayRef b) {
  const std::size_t ndim = std::max(a.size(), b.size());
  DimVector result(ndim, 1);
  for (std::size_t i = 0; i < ndim; ++i) {
    const std::int64_t size_a = i < a.size() ? a[a.size() - 1 - i] : 1;
    const std::int64_t size_b = i < b.size() ? b[b.size() - 1 - i] : 1;
    result[ndim - 1 - i] = size_a == 1 ? size_b : size_a;
  }
  return result;
}

// torch.matmul in double, from the operands as stored. Returns the shape and the values.
std::pair<DimVector, std::vector<double>> reference_matmul(const Tensor& a, const Tensor& b) {
  DimVector a_sizes(a.sizes()), b_sizes(b.sizes());
  if (a.dim() == 1) a_sizes.insert(0, 1);
  if (b.dim() == 1) b_sizes.push_back(1);
  const std::int64_t m = a_sizes[a_sizes.size() - 2], k = a_sizes.back(), n = b_sizes.back();
  const IntArrayRef a_batch(a_sizes.data(), a_sizes.size() - 2);
  const IntArrayRef b_batch(b_sizes.data(), b_sizes.size() - 2);
  DimVector sizes = broadcast_sizes(a_batch, b_batch);
  const std::int64_t count = product(sizes);
  const std::vector<double> x = elements(a), y = elements(b);
  std::vector<double> out;
  for (std::int64_t i = 0; i < count; ++i) {
    const std::int64_t ai = testing::broadcast_index(a_batch, sizes, i) * m * k;
    const std::int64_t bi = testing::broadcast_index(b_batch, sizes, i) * k * n;
    for (std::int64_t r = 0; r < m; ++r) {
      for (std::int64_t c = 0; c < n; ++c) {
        double sum = 0.0;
        for (std::int64_t j = 0; j < k; ++j) sum += x[ai + r * k + j] * y[bi + j * n + c];
        out.push_back(sum);
      }
    }
  }
  if (a.dim() >= 2) sizes.push_back(m);
  if (b.dim() >= 2) sizes.push_back(n);
  return {sizes, out};
}

void check_matmul(const Tensor& a, const Tensor& b, const std::string& what) {
  const Tensor out = matmul(a, b);
  const auto [sizes, expected] = reference_matmul(a, b);
  EXPECT_EQ(out.sizes(), IntArrayRef(sizes)) << what;
  EXPECT_EQ(out.dtype(), a.dtype()) << what;
  EXPECT_TRUE(out.is_contiguous()) << what;
  const std::int64_t k = a.size(-1);
  expect_close(out, expected, relative_tolerance(a.dtype()),
               dot_floor(elements(a), elements(b), k, a.dtype()), what);
}

// --- matmul: one table entry per shape and layout ---

// How an operand is laid out in memory; its values are random either way.
enum class Layout {
  Dense,
  Transposed,     // the last two dims stored the other way round: read in place, column-major
  Strided,        // every third element of a wider buffer: copied before the GEMM
  Expanded,       // dim 0 broadcast from size 1 (stride 0)
  BatchPermuted,  // dims 0 and 1 stored the other way round
};

struct Operand {
  DimVector sizes;
  Layout layout = Layout::Dense;
};

// Random values in [-2, 2).
Tensor r(IntArrayRef sizes, DType dtype, unsigned seed) {
  return random_tensor(sizes, dtype, -2.0, 2.0, seed);
}

Tensor make(const Operand& operand, DType dtype, unsigned seed) {
  DimVector stored(operand.sizes);
  const std::size_t n = stored.size();
  switch (operand.layout) {
    case Layout::Dense:
      return r(stored, dtype, seed);
    case Layout::Transposed:
      std::swap(stored[n - 1], stored[n - 2]);
      return r(stored, dtype, seed).transpose(-1, -2);
    case Layout::Strided:
      return non_contiguous(r(stored, dtype, seed));
    case Layout::Expanded:
      stored[0] = 1;
      return r(stored, dtype, seed).expand(operand.sizes);
    case Layout::BatchPermuted:
      std::swap(stored[0], stored[1]);
      return r(stored, dtype, seed).transpose(0, 1);
  }
  return {};
}

struct MatmulCase {
  const char* name;
  Operand a, b;
};

// Test names and failure messages show the case by name.
void PrintTo(const MatmulCase& c, std::ostream* out) {
  *out << c.name;
}

constexpr Layout kT = Layout::Transposed;
constexpr Layout kS = Layout::Strided;
constexpr Layout kE = Layout::Expanded;

// clang-format off
const MatmulCase kMatmulCases[] = {
    {"matrix_matrix",               {{5, 7}},          {{7, 3}}},
    {"dot",                         {{7}},             {{7}}},
    {"vector_matrix",               {{7}},             {{7, 4}}},
    {"matrix_vector",               {{5, 7}},          {{7}}},
    {"a_transposed",                {{5, 7}, kT},      {{7, 3}}},
    {"b_transposed",                {{5, 7}},          {{7, 3}, kT}},
    {"both_transposed",             {{5, 7}, kT},      {{7, 3}, kT}},
    {"a_strided_copied",            {{5, 7}, kS},      {{7, 3}}},
    {"b_strided_copied",            {{5, 7}},          {{7, 3}, kS}},
    {"strided_vectors",             {{7}, kS},         {{7}, kS}},
    {"strided_vector_times_matrix", {{7}, kS},         {{7, 4}, kT}},
    {"matrix_times_strided_vector", {{5, 7}},          {{7}, kS}},
    {"expanded_rows_copied",        {{5, 7}, kE},      {{7, 3}}},
    {"batched",                     {{3, 5, 7}},       {{3, 7, 4}}},
    {"broadcast_batch",             {{2, 1, 5, 7}},    {{3, 7, 4}}},
    {"shared_b_folded",             {{2, 3, 5, 7}},    {{7, 4}}},
    {"shared_b_permuted_batch",     {{2, 3, 5, 7}, Layout::BatchPermuted}, {{7, 4}}},
    {"shared_b_transposed_a",       {{2, 5, 7}, kT},   {{7, 4}}},
    {"shared_a",                    {{5, 7}},          {{2, 7, 4}}},
    {"vector_times_batch",          {{7}},             {{2, 7, 4}}},
    {"batch_times_vector",          {{2, 5, 7}},       {{7}}},
    {"expanded_batch",              {{3, 5, 7}, kE},   {{3, 7, 4}}},
    {"batch_transposed_operands",   {{3, 5, 7}, kT},   {{3, 7, 4}, kT}},
    {"batch_strided_operands",      {{3, 5, 7}, kS},   {{2, 1, 7, 4}, kS}},
    {"size_1_all",                  {{1, 1}},          {{1, 1}}},
    {"k_1",                         {{5, 1}},          {{1, 3}}},
    {"m_1_n_1",                     {{1, 7}},          {{7, 1}}},
    {"m_0",                         {{0, 7}},          {{7, 3}}},
    {"n_0",                         {{5, 7}},          {{7, 0}}},
    {"k_0_gives_zeros",             {{5, 0}},          {{0, 3}}},
    {"k_0_batched",                 {{2, 5, 0}},       {{0, 3}}},
    {"batch_0",                     {{0, 5, 7}},       {{1, 7, 3}}},
    {"long_k",                      {{3, 5000}},       {{5000, 2}}},
    // Above kMinParallelWork: one product on Eigen's threads, then a batch over an OpenMP loop.
    {"large_threaded",              {{130, 200}},      {{200, 150}, kT}},
    {"large_batch_threaded",        {{10, 64, 64}},    {{10, 64, 64}}},
};
// clang-format on

class MatmulTest : public ::testing::TestWithParam<std::tuple<MatmulCase, DType>> {};

TEST_P(MatmulTest, MatchesTripleLoop) {
  const auto& [c, dtype] = GetParam();
  check_matmul(make(c.a, dtype, 1), make(c.b, dtype, 2), c.name);
}

INSTANTIATE_TEST_SUITE_P(Ops, MatmulTest,
                         ::testing::Combine(::testing::ValuesIn(kMatmulCases),
                                            ::testing::Values(DType::Float32, DType::Float64)),
                         testing::CaseAndDtypeName());

TEST(Matmul, KZeroWritesZerosOverGarbage) {
  // The output comes from the caching allocator, so it may hold old values: K = 0 must clear it.
  { Tensor junk = full({5, 3}, 7.0f); }
  const Tensor out = matmul(zeros({5, 0}), zeros({0, 3}));
  EXPECT_EQ(out.to_vector<float>(), std::vector<float>(15, 0.0f));
}

TEST(Matmul, LeavesItsOperandsUntouched) {
  const Tensor a = non_contiguous(r({4, 6}, DType::Float32, 3));
  const Tensor b = r({6, 2}, DType::Float32, 4);
  const std::vector<double> a_before = elements(a), b_before = elements(b);
  matmul(a, b);
  EXPECT_EQ(elements(a), a_before);
  EXPECT_EQ(elements(b), b_before);
}

TEST(Matmul, ErrorsNameTheOpShapesAndDtypes) {
  std::string message = error_of([] { matmul(zeros({2, 3}), zeros({4, 5})); });
  EXPECT_THAT(message, HasSubstr("matmul: the inner dimensions do not match: a [2, 3] has 3 "
                                 "columns but b [4, 5] has 4 rows"));
  EXPECT_THAT(message, HasSubstr("(inputs: float32[2, 3], float32[4, 5])"));
  EXPECT_THAT(error_of([] { matmul(zeros({3}), zeros({4})); }),
              HasSubstr("a [3] has 3 columns but b [4] has 4 rows"));
  message = error_of([] { matmul(zeros({2, 3}), zeros({3, 2}, DType::Float64)); });
  EXPECT_THAT(message, HasSubstr("matmul: expected operands of one dtype, but got float32 and "
                                 "float64"));
  EXPECT_THAT(message, HasSubstr("(inputs: float32[2, 3], float64[3, 2])"));
  EXPECT_THAT(error_of([] {
                matmul(zeros({2, 2}, DType::Int64), zeros({2, 2}, DType::Int64));
              }),
              HasSubstr("matmul: expected float32 or float64 operands, but got int64"));
  EXPECT_THAT(error_of([] { matmul(zeros({}), zeros({2})); }),
              HasSubstr("matmul: expected operands with at least 1 dim, but got 0-d and 1-d"));
  EXPECT_THAT(error_of([] {
                matmul(zeros({2, 4, 3}), zeros({3, 3, 5}));
              }),
              HasSubstr("matmul: shapes [2] and [3] cannot be broadcast together"));
  EXPECT_THAT(error_of([] {
                matmul(zeros({2, 3}), Tensor());
              }),
              HasSubstr("matmul: input 1 is undefined"));
  EXPECT_THAT(error_of([] {
                matmul(zeros(DimVector(15, 1)), zeros({1, 1}));
              }),
              HasSubstr("matmul: at most 12 batch dims are supported, but got 13"));
}

// Small products force one thread through the calling thread's OpenMP setting and must put it
// back (Note [Threads in CPU GEMM]).
TEST(Matmul, LeavesTheCallersThreadCountAlone) {
  const int before = omp_get_max_threads();
  matmul(r({8, 8}, DType::Float32, 1), r({8, 8}, DType::Float32, 2));
  matmul(r({300, 200}, DType::Float32, 1), r({200, 100}, DType::Float32, 2));
  EXPECT_EQ(omp_get_max_threads(), before);
}

// The strided operand is copied into a scratch tensor that dies after the launch
// (Note [Scratch copies before a CPU kernel]); captured, its block is reused by the next op of the
// graph, and replays must still give the eager result for new input values.
TEST(MatmulCapture, ReplayWithScratchCopiesMatchesEager) {
  static const Stream stream = new_stream(kCPU);
  const Tensor a = non_contiguous(r({6, 5}, DType::Float32, 5));
  const Tensor b = r({5, 4}, DType::Float32, 6).t().contiguous().t();
  auto program = [](const Tensor& x, const Tensor& y) {
    const Tensor first = matmul(x, y);           // scratch copy of x, then GEMM
    const Tensor second = matmul(first.t(), x);  // reuses freed blocks inside the pool
    return add(second, matmul(non_contiguous(first).t(), x));  // (4, 6) @ (6, 5) again
  };
  DeviceGraph graph(kCPU);
  Tensor captured;
  {
    StreamGuard guard(stream);
    graph.begin_capture(stream);
    captured = program(a, b);
    graph.end_capture();
  }
  for (unsigned seed : {7u, 8u}) {
    a.copy_(r({6, 5}, DType::Float32, seed));
    b.copy_(r({5, 4}, DType::Float32, seed + 10));
    graph.replay();
    const Tensor eager = program(a, b);
    EXPECT_EQ(captured.to_vector<float>(), eager.to_vector<float>()) << "seed " << seed;
  }
}

// --- bmm ---

void check_bmm(const Tensor& a, const Tensor& b, const std::string& what) {
  const Tensor out = bmm(a, b);
  const auto [sizes, expected] = reference_matmul(a, b);
  EXPECT_EQ(out.sizes(), IntArrayRef(sizes)) << what;
  expect_close(out, expected, relative_tolerance(a.dtype()),
               dot_floor(elements(a), elements(b), a.size(2), a.dtype()), what);
}

TEST(Bmm, MatchesTripleLoopInEveryLayout) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    check_bmm(r({3, 5, 7}, dtype, 1), r({3, 7, 4}, dtype, 2), "contiguous");
    check_bmm(r({3, 7, 5}, dtype, 3).transpose(1, 2), non_contiguous(r({3, 7, 4}, dtype, 4)),
              "transposed and strided");
    check_bmm(r({2, 5, 0}, dtype, 5), r({2, 0, 3}, dtype, 6), "k_0");
    check_bmm(r({0, 5, 7}, dtype, 7), r({0, 7, 3}, dtype, 8), "batch_0");
  }
}

TEST(Bmm, ErrorsNameTheOp) {
  EXPECT_THAT(error_of([] {
                bmm(zeros({5, 7}), zeros({7, 4}));
              }),
              HasSubstr("bmm: expected two 3-d operands, but got 2-d and 2-d"));
  EXPECT_THAT(error_of([] {
                bmm(zeros({2, 5, 7}), zeros({3, 7, 4}));
              }),
              HasSubstr("bmm: expected equal batch sizes, but got 2 and 3"));
  EXPECT_THAT(error_of([] {
                bmm(zeros({2, 5, 7}), zeros({2, 6, 4}));
              }),
              HasSubstr("bmm: the inner dimensions do not match: a [2, 5, 7] has 7 columns"));
  EXPECT_THAT(error_of([] {
                bmm(zeros({2, 5, 7}), zeros({2, 7, 4}, DType::Float64));
              }),
              HasSubstr("bmm: expected operands of one dtype"));
}

// --- linear ---

// x (..., in) @ weight (out, in)^T + bias, in double.
std::vector<double> reference_linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  const std::int64_t in = weight.size(1), out = weight.size(0);
  const std::vector<double> xs = elements(x), ws = elements(weight);
  const std::vector<double> bs = bias.defined() ? elements(bias) : std::vector<double>(out, 0.0);
  std::vector<double> result;
  const std::int64_t rows = product(IntArrayRef(x.sizes().data(), x.sizes().size() - 1));
  for (std::int64_t row = 0; row < rows; ++row) {
    for (std::int64_t o = 0; o < out; ++o) {
      double sum = bs[o];
      for (std::int64_t i = 0; i < in; ++i) sum += xs[row * in + i] * ws[o * in + i];
      result.push_back(sum);
    }
  }
  return result;
}

struct LinearCase {
  const char* name;
  Operand x, weight, bias;  // bias: no sizes for "no bias"
};

void PrintTo(const LinearCase& c, std::ostream* out) {
  *out << c.name;
}

// clang-format off
const LinearCase kLinearCases[] = {
    {"matrix",                 {{4, 7}},              {{3, 7}},         {{3}}},
    {"no_bias",                {{4, 7}},              {{3, 7}},         {}},
    {"vector",                 {{7}},                 {{3, 7}},         {{3}}},
    {"batched_folded",         {{2, 3, 7}},           {{5, 7}},         {{5}}},
    {"batch_permuted",         {{2, 3, 7}, Layout::BatchPermuted}, {{5, 7}}, {{5}}},
    {"x_strided",              {{4, 7}, kS},          {{3, 7}},         {{3}}},
    {"weight_transposed_view", {{4, 7}},              {{3, 7}, kT},     {{3}}},
    {"weight_and_bias_strided",{{4, 7}},              {{3, 7}, kS},     {{3}, kS}},
    {"bias_expanded",          {{4, 7}},              {{3, 7}},         {{3}, kE}},
    {"in_features_0",          {{4, 0}},              {{3, 0}},         {{3}}},
    {"rows_0",                 {{0, 7}},              {{3, 7}},         {{3}}},
    {"mlp_layer_threaded",     {{128, 784}},          {{256, 784}},     {{256}}},
};
// clang-format on

class LinearTest : public ::testing::TestWithParam<std::tuple<LinearCase, DType>> {};

TEST_P(LinearTest, MatchesReference) {
  const auto& [c, dtype] = GetParam();
  const Tensor x = make(c.x, dtype, 1), weight = make(c.weight, dtype, 2);
  const Tensor bias = c.bias.sizes.empty() ? Tensor() : make(c.bias, dtype, 3);
  const Tensor out = linear(x, weight, bias);
  DimVector sizes(x.sizes());
  sizes[sizes.size() - 1] = weight.size(0);
  EXPECT_EQ(out.sizes(), IntArrayRef(sizes));
  // The bias adds one more rounding of a value no larger than the products' scale.
  expect_close(out, reference_linear(x, weight, bias), relative_tolerance(dtype),
               dot_floor(elements(x), elements(weight), weight.size(1) + 1, dtype), c.name);
}

INSTANTIATE_TEST_SUITE_P(Ops, LinearTest,
                         ::testing::Combine(::testing::ValuesIn(kLinearCases),
                                            ::testing::Values(DType::Float32, DType::Float64)),
                         testing::CaseAndDtypeName());

// linear_weight_grad against the double reference: grad^T x and the column sums of grad, with
// and without the bias, for a transposed (non-contiguous) grad and for no rows at all.
TEST(LinearWeightGrad, EqualsTheProductAndTheColumnSums) {
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    for (const std::int64_t rows : {std::int64_t{0}, std::int64_t{1}, std::int64_t{37}}) {
      const Tensor grad = random_tensor({rows, 5}, dtype, -2.0, 2.0, 61);
      const Tensor x = non_contiguous(random_tensor({rows, 3}, dtype, -2.0, 2.0, 62));
      const std::vector<double> g = elements(grad), v = elements(x);
      for (const bool bias : {true, false}) {
        const std::string what = std::string(dtype_name(dtype)) + " rows " + std::to_string(rows) +
                                 (bias ? " with bias" : "");
        const std::vector<Tensor> got = linear_weight_grad(grad, x, bias);
        ASSERT_EQ(got.size(), bias ? 2u : 1u) << what;
        EXPECT_EQ(got[0].sizes(), IntArrayRef({5, 3})) << what;
        std::vector<double> weight(15, 0.0), sums(5, 0.0);
        for (std::int64_t r = 0; r < rows; ++r) {
          for (std::int64_t o = 0; o < 5; ++o) {
            sums[o] += g[r * 5 + o];
            for (std::int64_t i = 0; i < 3; ++i) weight[o * 3 + i] += g[r * 5 + o] * v[r * 3 + i];
          }
        }
        expect_close(got[0], weight, relative_tolerance(dtype), dot_floor(g, v, rows, dtype),
                     what + " weight");
        if (bias) {
          EXPECT_EQ(got[1].sizes(), IntArrayRef({5})) << what;
          expect_close(got[1], sums, relative_tolerance(dtype), dot_floor(g, {1.0}, rows, dtype),
                       what + " bias");
        }
      }
    }
  }
  EXPECT_THAT(error_of([] {
                linear_weight_grad(zeros({4, 5}), zeros({3, 2}), true);
              }),
              HasSubstr("expected one row of grad per row of the input, but got 4 and 3 rows"));
  EXPECT_THAT(error_of([] {
                linear_weight_grad(zeros({4}), zeros({4, 2}), false);
              }),
              HasSubstr("expected a 2-d grad (rows, out_features)"));
}

TEST(Linear, ErrorsNameTheOpShapesAndDtypes) {
  std::string message = error_of([] { linear(zeros({4, 7}), zeros({3, 6})); });
  EXPECT_THAT(message, HasSubstr("linear: the input's last dim (7) does not match the weight's "
                                 "in_features (6): input [4, 7], weight [3, 6]"));
  EXPECT_THAT(message, HasSubstr("(inputs: float32[4, 7], float32[3, 6])"));
  EXPECT_THAT(error_of([] {
                linear(zeros({4, 7}), zeros({7}));
              }),
              HasSubstr("linear: expected a 2-d weight (out_features, in_features), but got 1-d"));
  EXPECT_THAT(error_of([] {
                linear(zeros({}), zeros({3, 1}));
              }),
              HasSubstr("linear: expected an input with at least 1 dim"));
  EXPECT_THAT(error_of([] {
                linear(zeros({4, 7}), zeros({3, 7}), zeros({4}));
              }),
              HasSubstr("linear: expected a bias of shape [3], but got [4]"));
  EXPECT_THAT(error_of([] {
                linear(zeros({4, 7}), zeros({3, 7}), zeros({3}, DType::Float64));
              }),
              HasSubstr("linear: expected a float32 bias, but got float64"));
  EXPECT_THAT(error_of([] {
                linear(zeros({4, 7}), zeros({3, 7}, DType::Float64));
              }),
              HasSubstr("linear: expected operands of one dtype, but got float32 and float64"));
  EXPECT_THAT(error_of([] {
                linear(zeros({4, 7}, DType::Int32), zeros({3, 7}, DType::Int32));
              }),
              HasSubstr("linear: expected float32 or float64 operands, but got int32"));
}

}  // namespace
}  // namespace grove::ops
