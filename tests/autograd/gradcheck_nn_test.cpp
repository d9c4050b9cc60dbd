// Gradcheck of the neural-network ops: softmax and log_softmax, cross_entropy (with ignored rows)
// and nll_loss (on log_softmax's output), layer_norm (with and without weight and bias, one and
// two normalized dims), embedding (repeated indices), conv2d (stride, padding, dilation, groups,
// bias), max_pool2d (overlapping windows, padding) and avg_pool2d (padding). max_pool2d's ties
// cannot be checked by central differences, so tests below give their gradient explicitly.
// Adding a case is one table entry. See tests/autograd/gradcheck_cases.h.
#include "gradcheck_cases.h"
#include "ops/attention.h"
#include "ops/conv.h"
#include "ops/elementwise.h"
#include "ops/embedding.h"
#include "ops/layer_norm.h"
#include "ops/pool.h"
#include "ops/rms_norm.h"
#include "ops/softmax.h"

namespace grove::autograd::testing {
namespace {

using namespace grove::ops;

Tensor conv2d_of(Inputs in) {
  return conv2d(in[0], in[1], in.size() > 2 ? in[2] : Tensor());
}

const std::vector<GradcheckCase>
    kCases =
        {
            // softmax, log_softmax
            {"softmax_dim1", {leaf({3, 5})}, [](Inputs in) { return softmax(in[0], 1); }},
            {"softmax_dim0_3d", {leaf({3, 2, 4})}, [](Inputs in) { return softmax(in[0], 0); }},
            {"softmax_dim_neg1_transposed",
             {transposed_leaf({2, 3, 4})},
             [](Inputs in) { return softmax(in[0], -1); }},
            {"softmax_size_1_dim", {leaf({3, 1})}, [](Inputs in) { return softmax(in[0], 1); }},
            {"softmax_0d", {leaf({})}, [](Inputs in) { return softmax(in[0], 0); }},
            {"softmax_transposed_output",
             {leaf({3, 4})},  // a strided gradient
             [](Inputs in) { return softmax(in[0], 1).t(); }},
            {"log_softmax_dim1", {leaf({3, 5})}, [](Inputs in) { return log_softmax(in[0], 1); }},
            {"log_softmax_dim_neg2_3d",
             {strided_leaf({2, 3, 4})},
             [](Inputs in) { return log_softmax(in[0], -2); }},
            {"log_softmax_0d", {leaf({})}, [](Inputs in) { return log_softmax(in[0], -1); }},
            // cross_entropy, nll_loss: logits (N, C), targets (N)
            {"cross_entropy",
             {leaf({4, 5}), int64_tensor({1, 0, 4, 1})},
             [](Inputs in) { return cross_entropy(in[0], in[1]); }},
            {"cross_entropy_ignored_rows",
             {leaf({5, 3}), int64_tensor({2, -100, 0, -100, 1})},
             [](Inputs in) { return cross_entropy(in[0], in[1]); }},
            {"cross_entropy_ignore_index_is_a_class",
             {transposed_leaf({4, 3}), int64_tensor({2, 1, 0, 1})},
             [](Inputs in) { return cross_entropy(in[0], in[1], /*ignore_index=*/1); }},
            {"cross_entropy_one_row",
             {leaf({1, 4}), int64_tensor({3})},
             [](Inputs in) { return cross_entropy(in[0], in[1]); }},
            {"cross_entropy_scaled",
             {leaf({3, 4}), int64_tensor({1, 1, 3})},  // a gradient other than 1
             [](Inputs in) { return mul(cross_entropy(in[0], in[1]), 3.0); }},
            {"nll_loss_of_log_softmax",
             {leaf({4, 5}), int64_tensor({3, 3, 0, 2})},
             [](Inputs in) { return nll_loss(log_softmax(in[0], 1), in[1]); }},
            {"nll_loss_ignored_rows",
             {leaf({4, 3}), int64_tensor({0, -100, 2, 2})},
             [](Inputs in) { return nll_loss(in[0], in[1]); }},
            {"nll_loss_transposed_expanded",
             {transposed_leaf({3, 4}), int64_tensor({3, 0, 2})},
             [](Inputs in) { return nll_loss(in[0], in[1]).expand({2}); }},
            // attention: q, k, v of (B, T, H, D); causal and not; q a strided view
            {"attention_causal",
             {leaf({2, 4, 2, 3}), leaf({2, 4, 2, 3}, 2), leaf({2, 4, 2, 3}, 3)},
             [](Inputs in) { return attention(in[0], in[1], in[2], true, 0.7); }},
            {"attention_full_strided",
             {leaf({2, 2, 5, 3}), leaf({2, 5, 2, 3}, 2), leaf({2, 5, 2, 3}, 3)},
             [](Inputs in) { return attention(in[0].transpose(1, 2), in[1], in[2], false, 0.5); }},
            // rms_norm: inputs x, then the weight when present
            {"rms_norm_plain", {leaf({3, 4})}, [](Inputs in) { return rms_norm(in[0], {4}); }},
            {"rms_norm_weight",
             {leaf({3, 4}), strided_leaf({4}, 2)},
             [](Inputs in) { return rms_norm(in[0], {4}, in[1], 1e-5); }},
            {"rms_norm_two_dims",
             {leaf({2, 3, 4}), leaf({3, 4}, 2)},
             [](Inputs in) {
               return rms_norm(in[0], {3, 4}, in[1]);
             }},
            // layer_norm: inputs x, then weight and bias when present
            {"layer_norm_plain", {leaf({3, 4})}, [](Inputs in) { return layer_norm(in[0], {4}); }},
            {"layer_norm_weight_bias",
             {leaf({3, 4}), leaf({4}, 2), leaf({4}, 3)},
             [](Inputs in) { return layer_norm(in[0], {4}, in[1], in[2]); }},
            {"layer_norm_weight_only",
             {leaf({3, 4}), strided_leaf({4}, 2)},
             [](Inputs in) { return layer_norm(in[0], {4}, in[1]); }},
            {"layer_norm_bias_only",
             {leaf({3, 4}), leaf({4}, 3)},
             [](Inputs in) { return layer_norm(in[0], {4}, Tensor(), in[1]); }},
            {"layer_norm_two_dims",
             {leaf({2, 3, 4}), leaf({3, 4}, 2), leaf({3, 4}, 3)},
             [](Inputs in) {
               return layer_norm(in[0], {3, 4}, in[1], in[2]);
             }},
            {"layer_norm_every_dim",
             {leaf({2, 3}), leaf({2, 3}, 2)},
             [](Inputs in) {
               return layer_norm(in[0], {2, 3}, in[1]);
             }},
            {"layer_norm_transposed_input",
             {transposed_leaf({2, 5}), leaf({5}, 2)},
             [](Inputs in) { return layer_norm(in[0], {5}, in[1]); }},
            {"layer_norm_transposed_output",
             {leaf({3, 4}), leaf({4}, 2), leaf({4}, 3)},
             [](Inputs in) { return layer_norm(in[0], {4}, in[1], in[2]).t(); }},
            // embedding: weight (V, D), indices with repeats (their gradients add up)
            {"embedding_repeated_indices",
             {leaf({5, 3}), int64_tensor({1, 3, 1, 0, 3, 3}, {2, 3})},
             [](Inputs in) { return embedding(in[0], in[1]); }},
            {"embedding_transposed_weight",
             {transposed_leaf({4, 3}), int64_tensor({2, 2, 0})},
             [](Inputs in) { return embedding(in[0], in[1]); }},
            {"embedding_0d_index",
             {leaf({4, 3}), int64_tensor({2})},
             [](Inputs in) { return embedding(in[0], in[1].reshape({})); }},
            {"embedding_transposed_output",
             {leaf({4, 3}), int64_tensor({1, 1, 3})},
             [](Inputs in) { return embedding(in[0], in[1]).t(); }},
            // conv2d: input (N, C, H, W), weight (O, C / G, kH, kW), bias (O)
            {"conv2d", {leaf({1, 2, 4, 4}), leaf({3, 2, 3, 3}, 2)}, conv2d_of},
            {"conv2d_bias", {leaf({2, 2, 4, 4}), leaf({3, 2, 2, 2}, 2), leaf({3}, 3)}, conv2d_of},
            {"conv2d_1x1", {leaf({2, 3, 3, 3}), leaf({2, 3, 1, 1}, 2), leaf({2}, 3)}, conv2d_of},
            {"conv2d_kernel_covers_input", {leaf({1, 2, 3, 3}), leaf({2, 2, 3, 3}, 2)}, conv2d_of},
            {"conv2d_stride",
             {leaf({1, 2, 5, 5}), leaf({2, 2, 3, 3}, 2)},
             [](Inputs in) { return conv2d(in[0], in[1], {}, {2, 2}); }},
            {"conv2d_stride_uneven_cover",  // the last row and column are in no window
             {leaf({1, 1, 6, 6}), leaf({2, 1, 3, 3}, 2)},
             [](Inputs in) {
               return conv2d(in[0], in[1], {}, {2, 2});
             }},
            {"conv2d_padding",
             {leaf({1, 2, 4, 4}), leaf({2, 2, 3, 3}, 2)},
             [](Inputs in) { return conv2d(in[0], in[1], {}, {1, 1}, {1, 2}); }},
            {"conv2d_padding_wider_than_kernel",
             {leaf({1, 1, 3, 3}), leaf({1, 1, 2, 2}, 2)},
             [](Inputs in) {
               return conv2d(in[0], in[1], {}, {1, 1}, {2, 2});
             }},
            {"conv2d_dilation",
             {leaf({1, 2, 5, 5}), leaf({2, 2, 2, 2}, 2)},
             [](Inputs in) { return conv2d(in[0], in[1], {}, {1, 1}, {0, 0}, {2, 2}); }},
            {"conv2d_groups",
             {leaf({1, 4, 4, 4}), leaf({4, 2, 2, 2}, 2), leaf({4}, 3)},
             [](Inputs in) {
               return conv2d(in[0], in[1], in[2], {1, 1}, {0, 0}, {1, 1}, 2);
             }},
            {"conv2d_depthwise",
             {leaf({1, 3, 4, 4}), leaf({3, 1, 2, 2}, 2)},
             [](Inputs in) { return conv2d(in[0], in[1], {}, {1, 1}, {1, 1}, {1, 1}, 3); }},
            {"conv2d_everything",
             {strided_leaf({2, 4, 5, 4}), leaf({6, 2, 3, 2}, 2), leaf({6}, 3)},
             [](Inputs in) {
               return conv2d(in[0], in[1], in[2], {2, 1}, {1, 1}, {1, 2}, 2);
             }},
            {"conv2d_transposed_weight",
             {leaf({1, 2, 4, 4}), transposed_leaf({2, 2, 3, 2}, 2)},
             conv2d_of},
            {"conv2d_permuted_input",
             {leaf({1, 4, 4, 2}), constant({2, 2, 2, 2}, 2)},  // NHWC storage
             [](Inputs in) {
               return conv2d(in[0].permute({0, 3, 1, 2}), in[1]);
             }},
            {"conv2d_permuted_output",
             {leaf({1, 4, 4, 4}), leaf({4, 2, 3, 3}, 2), leaf({4}, 3)},
             [](Inputs in) {
               return conv2d(in[0], in[1], in[2], {1, 1}, {1, 1}, {1, 1}, 2).permute({1, 3, 2, 0});
             }},
            // max_pool2d (random values: no ties within a window), avg_pool2d
            {"max_pool2d",
             {leaf({1, 2, 4, 4})},
             [](Inputs in) { return max_pool2d(in[0], {2, 2}); }},
            {"max_pool2d_overlapping",
             {leaf({1, 2, 5, 5})},
             [](Inputs in) { return max_pool2d(in[0], {3, 3}, {1, 1}); }},
            {"max_pool2d_padding_stride",
             {leaf({2, 1, 5, 4})},
             [](Inputs in) { return max_pool2d(in[0], {3, 2}, {2, 1}, {1, 1}); }},
            {"max_pool2d_3d_input_transposed",
             {transposed_leaf({2, 4, 4})},
             [](Inputs in) { return max_pool2d(in[0], {2, 2}, {1, 1}); }},
            {"max_pool2d_of_view",
             {leaf({1, 1, 6, 6})},
             [](Inputs in) { return max_pool2d(in[0].slice(3, 0, 6, 2), {2, 2}, {1, 1}); }},
            {"max_pool2d_transposed_output",
             {leaf({1, 2, 4, 4})},
             [](Inputs in) { return max_pool2d(in[0], {2, 2}, {1, 1}).transpose(2, 3); }},
            {"avg_pool2d",
             {leaf({1, 2, 4, 4})},
             [](Inputs in) { return avg_pool2d(in[0], {2, 2}); }},
            {"avg_pool2d_padding",
             {leaf({1, 2, 5, 5})},
             [](Inputs in) { return avg_pool2d(in[0], {3, 3}, {2, 2}, {1, 1}); }},
            {"avg_pool2d_overlapping_3d",
             {strided_leaf({2, 4, 5})},
             [](Inputs in) { return avg_pool2d(in[0], {2, 3}, {1, 1}, {1, 1}); }},
            {"avg_pool2d_rectangular",
             {leaf({1, 1, 5, 6})},
             [](Inputs in) { return avg_pool2d(in[0], {2, 3}, {3, 2}, {1, 1}); }},
            {"avg_pool2d_transposed_output",
             {leaf({1, 2, 4, 4})},
             [](Inputs in) { return avg_pool2d(in[0], {2, 2}, {1, 1}, {1, 1}).transpose(1, 3); }},
};

class NnGradcheck : public ::testing::TestWithParam<GradcheckCase> {};

TEST_P(NnGradcheck, MatchesFiniteDifferences) {
  expect_gradcheck(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Nn, NnGradcheck, ::testing::ValuesIn(kCases), CaseName());

// max_pool2d with ties: each window's gradient goes to the element its index output names (the
// first maximum in row-major window order), and elements named by several overlapping windows
// add up their gradients. The expected gradient is built from a naive search for that element.
void expect_tied_max_pool_gradient(const std::vector<double>& values, std::int64_t height,
                                   std::int64_t width, std::int64_t kernel, std::int64_t stride) {
  const Tensor x = from_vector(values).reshape({1, 1, height, width}).requires_grad_();
  const Tensor y = max_pool2d(x, {kernel, kernel}, {stride, stride});
  const std::int64_t out_h = y.size(2);
  const std::int64_t out_w = y.size(3);
  const Tensor grad = random_tensor({1, 1, out_h, out_w}, 5);
  y.backward(grad);
  const std::vector<double> g = grad.to_vector<double>();
  std::vector<double> expected(values.size(), 0.0);
  for (std::int64_t oy = 0; oy < out_h; ++oy) {
    for (std::int64_t ox = 0; ox < out_w; ++ox) {
      std::int64_t best = oy * stride * width + ox * stride;
      for (std::int64_t ky = 0; ky < kernel; ++ky) {
        for (std::int64_t kx = 0; kx < kernel; ++kx) {
          const std::int64_t at = (oy * stride + ky) * width + ox * stride + kx;
          if (values[static_cast<std::size_t>(at)] > values[static_cast<std::size_t>(best)]) {
            best = at;
          }
        }
      }
      expected[static_cast<std::size_t>(best)] += g[static_cast<std::size_t>(oy * out_w + ox)];
    }
  }
  const std::vector<double> actual = x.grad().to_vector<double>();
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    // The same additions in possibly another order: equal to a few ulps.
    EXPECT_NEAR(actual[i], expected[i], 1e-12) << "input element " << i;
  }
}

TEST(MaxPoolTies, ConstantInputSendsEachWindowsGradientToItsFirstElement) {
  expect_tied_max_pool_gradient(std::vector<double>(16, 1.5), 4, 4, 2, 2);
}

TEST(MaxPoolTies, OverlappingWindowsWithRepeatedValuesAddUp) {
  expect_tied_max_pool_gradient({1, 1, 0, 2, 2,  //
                                 1, 1, 2, 2, 0,  //
                                 0, 3, 0, 3, 3,  //
                                 3, 0, 3, 3, 1,  //
                                 1, 1, 1, 1, 1},
                                5, 5, 3, 1);
  expect_tied_max_pool_gradient({2, 2, 2, 2, 2,  //
                                 2, 0, 2, 0, 2,  //
                                 2, 2, 2, 2, 2,  //
                                 1, 1, 1, 1, 1,  //
                                 1, 1, 1, 1, 1},
                                5, 5, 3, 2);
}

}  // namespace

const std::vector<GradcheckCase>& nn_gradcheck_cases() {
  return kCases;
}

}  // namespace grove::autograd::testing
