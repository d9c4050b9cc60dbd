// attention (ops/attention.h) against a naive reference in double: the scores, the causal mask,
// a two-pass softmax and the weighted sum, written as plain loops; its backward against central
// differences of the forward. Inputs are strided views, as the GPT's q, k and v are.
#include "ops/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "op_test_util.h"

namespace grove::ops {
namespace {

using testing::elements;
using testing::expect_close;
using testing::expect_gradient;
using testing::random_tensor;

// out (B, T, H, D) and lse (B, H, T) of attention over the contiguous values of q, k, v.
struct Reference {
  std::vector<double> out;
  std::vector<double> lse;
};

Reference reference(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale) {
  const std::int64_t B = q.size(0), T = q.size(1), H = q.size(2), D = q.size(3);
  const std::vector<double> qs = elements(q), ks = elements(k), vs = elements(v);
  auto at = [&](const std::vector<double>& x, std::int64_t b, std::int64_t t, std::int64_t h,
                std::int64_t d) {
    return x[static_cast<std::size_t>(((b * T + t) * H + h) * D + d)];
  };
  Reference r{std::vector<double>(static_cast<std::size_t>(B * T * H * D)),
              std::vector<double>(static_cast<std::size_t>(B * H * T))};
  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t h = 0; h < H; ++h) {
      for (std::int64_t t = 0; t < T; ++t) {
        const std::int64_t keys = causal ? t + 1 : T;
        std::vector<double> s(static_cast<std::size_t>(keys));
        for (std::int64_t u = 0; u < keys; ++u) {
          double dot = 0.0;
          for (std::int64_t d = 0; d < D; ++d) dot += at(qs, b, t, h, d) * at(ks, b, u, h, d);
          s[static_cast<std::size_t>(u)] = scale * dot;
        }
        const double top = *std::max_element(s.begin(), s.end());
        double total = 0.0;
        for (double& x : s) total += (x = std::exp(x - top));
        for (std::int64_t d = 0; d < D; ++d) {
          double sum = 0.0;
          for (std::int64_t u = 0; u < keys; ++u) {
            sum += s[static_cast<std::size_t>(u)] * at(vs, b, u, h, d);
          }
          r.out[static_cast<std::size_t>(((b * T + t) * H + h) * D + d)] = sum / total;
        }
        r.lse[static_cast<std::size_t>((b * H + h) * T + t)] = top + std::log(total);
      }
    }
  }
  return r;
}

// (B, T, H, D) views of one (B, T, 3, H, D) block, as a projection's q, k, v: strided.
struct Heads {
  Tensor q, k, v;
};
Heads packed_heads(DType dtype, std::int64_t B, std::int64_t T, std::int64_t H, std::int64_t D,
                   unsigned seed) {
  const Tensor block = random_tensor({B, T, 3, H, D}, dtype, -1.5, 1.5, seed);
  return {block.select(2, 0), block.select(2, 1), block.select(2, 2)};
}

class AttentionTest : public ::testing::TestWithParam<DType> {};

TEST_P(AttentionTest, MatchesTheReferenceCausalAndNot) {
  const DType dtype = GetParam();
  for (const bool causal : {true, false}) {
    const Heads x = packed_heads(dtype, 2, 7, 3, 5, causal ? 1 : 2);
    const AttentionResult r = attention_with_lse(x.q, x.k, x.v, causal, 0.45);
    EXPECT_TRUE(r.output.is_contiguous());
    EXPECT_EQ(r.output.sizes(), x.q.sizes());
    EXPECT_EQ(r.lse.sizes(), IntArrayRef({2, 3, 7}));
    const Reference expected = reference(x.q, x.k, x.v, causal, 0.45);
    const double tolerance = testing::relative_tolerance(dtype);
    const std::string what = causal ? "causal" : "full";
    expect_close(r.output, expected.out, tolerance, tolerance, what + " out");
    expect_close(r.lse, expected.lse, tolerance, tolerance, what + " lse");
  }
}

TEST_P(AttentionTest, EdgeSizes) {
  const DType dtype = GetParam();
  // One position: every query attends to itself only, so out = v.
  const Heads one = packed_heads(dtype, 2, 1, 2, 3, 5);
  expect_close(attention(one.q, one.k, one.v, true, 1.0), elements(one.v), 0.0, 0.0, "T = 1");
  // Empty batch and empty head width: shapes only; D = 0 gives uniform weights (lse = log keys).
  EXPECT_EQ(attention(zeros({0, 4, 2, 3}, dtype), zeros({0, 4, 2, 3}, dtype),
                      zeros({0, 4, 2, 3}, dtype), true, 1.0)
                .sizes(),
            IntArrayRef({0, 4, 2, 3}));
  const Tensor empty_width = zeros({1, 3, 1, 0}, dtype);
  const AttentionResult r = attention_with_lse(empty_width, empty_width, empty_width, true, 1.0);
  expect_close(r.lse, {0.0, std::log(2.0), std::log(3.0)}, 1e-6, 1e-6, "D = 0");
}

// The backward op against central differences of sum(out * weights), one input at a time.
TEST(AttentionBackward, IsTheDerivativeOfAttention) {
  for (const bool causal : {true, false}) {
    const Heads x = packed_heads(DType::Float64, 2, 5, 2, 3, causal ? 7 : 8);
    const Tensor weights = random_tensor({2, 5, 2, 3}, DType::Float64, -1, 1, 9);
    const AttentionResult r = attention_with_lse(x.q, x.k, x.v, causal, 0.6);
    const AttentionGrads g =
        attention_backward(weights, x.q, x.k, x.v, r.output, r.lse, causal, 0.6);
    const std::string what = causal ? "causal" : "full";
    expect_gradient(
        g.grad_q, [&](const Tensor& t) { return attention(t, x.k, x.v, causal, 0.6); }, x.q,
        weights, what + " q");
    expect_gradient(
        g.grad_k, [&](const Tensor& t) { return attention(x.q, t, x.v, causal, 0.6); }, x.k,
        weights, what + " k");
    expect_gradient(
        g.grad_v, [&](const Tensor& t) { return attention(x.q, x.k, t, causal, 0.6); }, x.v,
        weights, what + " v");
  }
}

// Infinite scores: a row whose scores are all -inf has a NaN output, as softmax gives; a NaN
// input poisons its rows.
TEST(Attention, NonFiniteInputsPropagate) {
  Tensor q = zeros({1, 2, 1, 1}, DType::Float64);
  Tensor k = full({1, 2, 1, 1}, 1.0, TensorOptions(DType::Float64));
  const Tensor v = full({1, 2, 1, 1}, 2.0, TensorOptions(DType::Float64));
  q.view({2}).select(0, 0).fill_(-std::numeric_limits<double>::infinity());
  const std::vector<double> out = elements(attention(q, k, v, true, 1.0));
  EXPECT_TRUE(std::isnan(out[0])) << "all of row 0's scores are -inf";
  EXPECT_EQ(out[1], 2.0);
  k.view({2}).select(0, 0).fill_(std::numeric_limits<double>::quiet_NaN());
  const std::vector<double> poisoned =
      elements(attention(zeros({1, 2, 1, 1}, DType::Float64), k, v, true, 1.0));
  EXPECT_TRUE(std::isnan(poisoned[0]) && std::isnan(poisoned[1]));
}

TEST(Attention, ShapeAndDtypeErrors) {
  const Tensor q = zeros({2, 3, 2, 4});
  EXPECT_THAT(testing::error_of([&] {
                attention(q.view({2, 3, 8}), q, q, true, 1.0);
              }),
              ::testing::HasSubstr("attention: expected q, k and v of shape (B, T, H, D), but q "
                                   "has 3 dims [2, 3, 8]"));
  EXPECT_THAT(testing::error_of([&] {
                attention(q, zeros({2, 4, 2, 4}), q, true, 1.0);
              }),
              ::testing::HasSubstr("expected k of q's shape [2, 3, 2, 4], but got [2, 4, 2, 4]"));
  EXPECT_THAT(testing::error_of([&] {
                attention(q, q, zeros({2, 3, 2, 4}, DType::Float64), true, 1.0);
              }),
              ::testing::HasSubstr("expected v of q's dtype float32, but got float64"));
  const Tensor ints = zeros({2, 3, 2, 4}, DType::Int64);
  EXPECT_THAT(testing::error_of([&] { attention(ints, ints, ints, true, 1.0); }),
              ::testing::HasSubstr("expected float32 or float64, but got int64"));
  EXPECT_THAT(testing::error_of([&] { attention(q, q, q, true, INFINITY); }),
              ::testing::HasSubstr("expected a finite scale, but got inf"));
}

INSTANTIATE_TEST_SUITE_P(Ops, AttentionTest, ::testing::Values(DType::Float32, DType::Float64),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace grove::ops
