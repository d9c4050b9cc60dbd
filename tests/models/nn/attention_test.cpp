// CausalSelfAttention: values against attention written out in double from its own weights,
// causality, the mask buffer, errors, and a gradcheck in double through every parameter.
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

using testing::values;

// y = x W^T + b for row-major x (rows, in), W (out, in).
std::vector<double> linear_reference(const std::vector<double>& x, const std::vector<double>& w,
                                     const std::vector<double>& b, int rows, int in, int out) {
  std::vector<double> y(static_cast<std::size_t>(rows * out));
  for (int r = 0; r < rows; ++r) {
    for (int o = 0; o < out; ++o) {
      double sum = b[o];
      for (int i = 0; i < in; ++i) sum += x[r * in + i] * w[o * in + i];
      y[r * out + o] = sum;
    }
  }
  return y;
}

// Attention of one sequence x (T, C) with H heads, written out with loops.
std::vector<double> attention_reference(const CausalSelfAttention& attention,
                                        const std::vector<double>& x, int length, int embd,
                                        int heads) {
  const std::vector<double> qkv =
      linear_reference(x, values(attention.qkv()->weight()), values(attention.qkv()->bias()),
                       length, embd, 3 * embd);  // (T, 3C): q | k | v
  const int width = embd / heads;
  std::vector<double> merged(static_cast<std::size_t>(length * embd));  // (T, C)
  for (int h = 0; h < heads; ++h) {
    for (int t = 0; t < length; ++t) {
      // Scores of query t over keys 0..t (the later ones are masked out).
      std::vector<double> scores;
      double largest = -INFINITY;
      for (int s = 0; s <= t; ++s) {
        double dot = 0.0;
        for (int d = 0; d < width; ++d) {
          dot += qkv[t * 3 * embd + h * width + d] * qkv[s * 3 * embd + embd + h * width + d];
        }
        scores.push_back(dot / std::sqrt(static_cast<double>(width)));
        largest = std::max(largest, scores.back());
      }
      double total = 0.0;
      for (double& score : scores) total += (score = std::exp(score - largest));
      for (int d = 0; d < width; ++d) {
        double sum = 0.0;
        for (int s = 0; s <= t; ++s)
          sum += scores[s] / total * qkv[s * 3 * embd + 2 * embd + h * width + d];
        merged[t * embd + h * width + d] = sum;
      }
    }
  }
  return linear_reference(merged, values(attention.proj()->weight()),
                          values(attention.proj()->bias()), length, embd, embd);
}

TEST(CausalSelfAttention, MatchesAttentionWrittenOutInDouble) {
  manual_seed(21);
  const int batch = 2, length = 5, embd = 8, heads = 2;
  CausalSelfAttention attention(embd, heads, /*block=*/7);
  const Tensor x = ops::randn({batch, length, embd});
  const Tensor y = attention(x);
  EXPECT_EQ(y.sizes(), IntArrayRef({batch, length, embd}));
  for (int b = 0; b < batch; ++b) {
    // float32 matmuls and softmax over ~10 terms of size ~1: 1e-5 covers their rounding.
    testing::expect_close(
        values(y.select(0, b)),
        attention_reference(attention, values(x.select(0, b)), length, embd, heads), 1e-5, 1e-5);
  }
}

TEST(CausalSelfAttention, LaterPositionsDoNotChangeEarlierOutputs) {
  manual_seed(22);
  CausalSelfAttention attention(8, 4, 6);
  const Tensor x = ops::randn({1, 6, 8});
  const Tensor changed = x.clone();
  changed.select(1, 4).copy_(ops::randn({8}));  // positions 4 and 5 differ
  changed.select(1, 5).copy_(ops::randn({8}));
  const Tensor before = attention(x), after = attention(changed);
  EXPECT_EQ(values(before.slice(1, 0, 4)), values(after.slice(1, 0, 4)));  // exactly equal
  EXPECT_NE(values(before.select(1, 4)), values(after.select(1, 4)));
}

TEST(CausalSelfAttention, MaskIsANonPersistentBoolBufferAboveTheDiagonal) {
  CausalSelfAttention attention(4, 2, 3);
  const NamedTensors buffers = attention.named_buffers();
  ASSERT_EQ(buffers.size(), 1u);
  EXPECT_EQ(buffers[0].first, "causal_mask");
  EXPECT_EQ(buffers[0].second.dtype(), DType::Bool);
  EXPECT_EQ(buffers[0].second.sizes(), IntArrayRef({3, 3}));
  EXPECT_EQ(values(buffers[0].second), (std::vector<double>{0, 1, 1, 0, 0, 1, 0, 0, 0}));
  EXPECT_EQ(testing::names(attention.named_parameters()),
            (std::vector<std::string>{"qkv.weight", "qkv.bias", "proj.weight", "proj.bias"}));
  EXPECT_EQ(attention.qkv()->weight().sizes(), IntArrayRef({12, 4}));
  attention.to(DType::Float64);  // the bool mask stays bool
  EXPECT_EQ(attention.named_buffers()[0].second.dtype(), DType::Bool);
}

TEST(CausalSelfAttention, ErrorsNameTheProblem) {
  EXPECT_NE(testing::error_message([] { CausalSelfAttention(10, 4, 8); }).find("divisible"),
            std::string::npos);
  CausalSelfAttention attention(4, 2, 3);
  EXPECT_NE(testing::error_message([&] {
              attention(ops::randn({1, 4, 4}));
            }).find("block = 3"),
            std::string::npos);
  EXPECT_NE(testing::error_message([&] {
              attention(ops::randn({4, 4}));
            }).find("(B, T, 4)"),
            std::string::npos);
}

TEST(CausalSelfAttention, GradcheckInDouble) {
  manual_seed(23);
  CausalSelfAttention attention(4, 2, 3);
  attention.to(DType::Float64);
  const Tensor x = ops::randn({1, 3, 4}, DType::Float64).requires_grad_();
  std::vector<Tensor> inputs = {x};
  for (const Tensor& parameter : attention.parameters()) inputs.push_back(parameter);
  // The parameters are perturbed in place by gradcheck; the module reads them at each call.
  const auto result = autograd::gradcheck(
      [&](std::span<const Tensor> given) { return attention(given[0]); }, inputs);
  EXPECT_TRUE(result.ok) << result.report;
}

}  // namespace
}  // namespace grove::nn
