// Gradcheck of the elementwise ops (ops/elementwise.h): binary arithmetic with broadcasting of
// either or both operands, 0-d tensor and Scalar operands, non-contiguous leaves; where,
// masked_fill and clamp; every unary op on inputs inside its domain and away from its kinks.
// maximum and minimum at ties get an explicit test.
// Adding a case is one table entry. See tests/autograd/gradcheck_cases.h.
#include <cmath>

#include "gradcheck_cases.h"
#include "ops/elementwise.h"

namespace grove::autograd::testing {
namespace {

using namespace grove::ops;

// maximum/minimum operands that never tie: `a` avoids every value of b = leaf(b_sizes, 2) by
// 0.05 (at a tie the two one-sided derivatives differ).
std::vector<MakeInput> untied(DimVector a_sizes, DimVector b_sizes) {
  std::vector<double> b_values = uniform_values(product(b_sizes), -2.0, 2.0, 2);
  return {leaf_avoiding(std::move(a_sizes), std::move(b_values)), leaf(std::move(b_sizes), 2)};
}

Tensor add_of(Inputs in) {
  return add(in[0], in[1]);
}
Tensor sub_of(Inputs in) {
  return sub(in[0], in[1]);
}
Tensor mul_of(Inputs in) {
  return mul(in[0], in[1]);
}
Tensor div_of(Inputs in) {
  return div(in[0], in[1]);
}
Tensor maximum_of(Inputs in) {
  return maximum(in[0], in[1]);
}
Tensor minimum_of(Inputs in) {
  return minimum(in[0], in[1]);
}
Tensor where_of(Inputs in) {
  return where(in[0], in[1], in[2]);
}

const std::vector<GradcheckCase> kCases = {
    // add, sub: same shapes, each operand broadcast, both broadcast, 0-d, Scalar, strided
    {"add", {leaf({3, 4}), leaf({3, 4}, 2)}, add_of},
    {"add_broadcast_both", {leaf({3, 1}), leaf({1, 4}, 2)}, add_of},
    {"add_broadcast_rank", {leaf({2, 3, 4}), leaf({4}, 2)}, add_of},
    {"add_0d_tensor", {leaf({3, 4}), leaf({}, 2)}, add_of},
    {"add_scalar", {leaf({3, 4})}, [](Inputs in) { return add(in[0], 2.5); }},
    {"add_non_contiguous", {transposed_leaf({3, 4}), strided_leaf({3, 4})}, add_of},
    {"add_one_operand_constant", {constant({3, 4}), leaf({4}, 2)}, add_of},
    {"add_same_input_twice", {leaf({3, 4})}, [](Inputs in) { return add(in[0], in[0]); }},
    {"sub_broadcast_both", {leaf({2, 1, 3}), leaf({4, 1}, 2)}, sub_of},
    {"sub_0d_left", {leaf({}), leaf({3, 4}, 2)}, sub_of},
    {"sub_scalar", {leaf({3, 4})}, [](Inputs in) { return sub(in[0], -1.5); }},
    // mul, div
    {"mul", {leaf({3, 4}), leaf({3, 4}, 2)}, mul_of},
    {"mul_broadcast_both", {leaf({3, 1}), leaf({1, 4}, 2)}, mul_of},
    {"mul_0d_left", {leaf({}), leaf({2, 3}, 2)}, mul_of},
    {"mul_scalar", {leaf({3, 4})}, [](Inputs in) { return mul(in[0], -0.75); }},
    {"mul_same_input_twice", {leaf({3, 4})}, [](Inputs in) { return mul(in[0], in[0]); }},
    {"mul_non_contiguous", {transposed_leaf({3, 4}), strided_leaf({4}, 2)}, mul_of},
    {"div", {leaf({3, 4}), positive_leaf({3, 4}, 2)}, div_of},
    {"div_broadcast_both", {leaf({3, 1}), positive_leaf({1, 4}, 2)}, div_of},
    {"div_0d_denominator", {leaf({2, 3}), positive_leaf({}, 2)}, div_of},
    {"div_0d_numerator", {leaf({}), positive_leaf({2, 3}, 2)}, div_of},
    {"div_scalar", {leaf({3, 4})}, [](Inputs in) { return div(in[0], 0.4); }},
    {"div_non_contiguous", {strided_leaf({3, 4}), transposed_leaf({3, 4}, 2, 0.5, 2.0)}, div_of},
    {"div_same_input_twice", {positive_leaf({3, 4})}, [](Inputs in) { return div(in[0], in[0]); }},
    // maximum, minimum: operands never tie (see untied), except with themselves, where the
    // tie's split gradient (g/2 + g/2) is the derivative of maximum(x, x) = x
    {"maximum", untied({3, 4}, {3, 4}), maximum_of},
    {"maximum_broadcast", untied({3, 4}, {4}), maximum_of},
    {"maximum_0d", untied({3, 4}, {}), maximum_of},
    {"maximum_same_input_twice", {leaf({3, 4})}, [](Inputs in) { return maximum(in[0], in[0]); }},
    {"minimum", untied({3, 4}, {3, 4}), minimum_of},
    {"minimum_broadcast_both", untied({3, 1}, {1, 4}), minimum_of},
    {"minimum_same_input_twice", {leaf({3, 4})}, [](Inputs in) { return minimum(in[0], in[0]); }},
    // where, masked_fill, clamp
    {"where", {bool_tensor({1, 0, 0, 1, 1, 0}, {2, 3}), leaf({2, 3}), leaf({2, 3}, 2)}, where_of},
    {"where_broadcast", {bool_tensor({1, 0, 1, 0}, {4}), leaf({3, 4}), leaf({3, 1}, 2)}, where_of},
    {"where_condition_broadcasts_operands",
     {bool_tensor({1, 0, 1, 0, 0, 1, 1, 0, 1, 1, 0, 0}, {3, 4}), leaf({4}), leaf({3, 1}, 2)},
     where_of},
    {"where_0d_operand",
     {bool_tensor({0, 1, 1, 0, 1, 0}, {2, 3}), leaf({}), leaf({2, 3}, 2)},
     where_of},
    {"masked_fill",
     {leaf({3, 4}), bool_tensor({1, 0, 0, 1, 0, 1, 1, 0, 0, 0, 1, 1}, {3, 4})},
     [](Inputs in) { return masked_fill(in[0], in[1], 0.5); }},
    {"masked_fill_broadcast_mask",
     {strided_leaf({3, 4}), bool_tensor({0, 1, 1, 0}, {4})},
     [](Inputs in) { return masked_fill(in[0], in[1], -1.0); }},
    {"clamp",
     {leaf_avoiding({4, 5}, {-0.5, 1.0})},
     [](Inputs in) { return clamp(in[0], -0.5, 1.0); }},
    {"clamp_low_only",
     {leaf_avoiding({4, 5}, {-0.5})},
     [](Inputs in) { return clamp(in[0], -0.5, INFINITY); }},
    {"clamp_high_only",
     {leaf_avoiding({4, 5}, {0.25})},
     [](Inputs in) { return clamp(in[0], -INFINITY, 0.25); }},
    // unary; log, sqrt, rsqrt and non-integer powers on positive inputs; abs and relu away from 0
    {"neg", {leaf({3, 4})}, [](Inputs in) { return neg(in[0]); }},
    {"exp", {leaf({3, 4})}, [](Inputs in) { return exp(in[0]); }},
    {"exp_non_contiguous", {transposed_leaf({3, 4})}, [](Inputs in) { return exp(in[0]); }},
    {"exp_of_expanded",
     {leaf({3, 1})},
     [](Inputs in) {
       return exp(in[0].expand({3, 4}));
     }},
    {"log", {positive_leaf({3, 4})}, [](Inputs in) { return log(in[0]); }},
    {"sqrt", {positive_leaf({3, 4})}, [](Inputs in) { return sqrt(in[0]); }},
    {"sqrt_non_contiguous",
     {strided_leaf({3, 4}, 1, 0.5, 2.0)},
     [](Inputs in) { return sqrt(in[0]); }},
    {"rsqrt", {positive_leaf({3, 4})}, [](Inputs in) { return rsqrt(in[0]); }},
    {"pow_2_5", {positive_leaf({3, 4})}, [](Inputs in) { return pow(in[0], 2.5); }},
    {"pow_minus_1_5", {positive_leaf({3, 4})}, [](Inputs in) { return pow(in[0], -1.5); }},
    {"pow_3_negative_inputs", {leaf({3, 4})}, [](Inputs in) { return pow(in[0], 3.0); }},
    {"pow_0", {leaf({3, 4})}, [](Inputs in) { return pow(in[0], 0.0); }},
    {"abs", {leaf_avoiding({3, 4}, {0.0})}, [](Inputs in) { return abs(in[0]); }},
    {"tanh", {leaf({3, 4})}, [](Inputs in) { return tanh(in[0]); }},
    {"sigmoid", {leaf({3, 4})}, [](Inputs in) { return sigmoid(in[0]); }},
    {"relu", {leaf_avoiding({3, 4}, {0.0})}, [](Inputs in) { return relu(in[0]); }},
    {"relu_strided",
     {strided_leaf({3, 4})},  // shifted: relu's kink is then at -0.0123
     [](Inputs in) { return relu(add(in[0], 0.0123)); }},
    // relu's derivative as an op: linear in the gradient; y only selects, away from its kink
    {"relu_backward",
     {leaf({3, 4}), leaf_avoiding({3, 4}, {0.0}, 2)},
     [](Inputs in) { return relu_backward(in[0], in[1]); }},
    {"gelu", {leaf({3, 4}, 1, -3.0, 3.0)}, [](Inputs in) { return gelu(in[0]); }},
    {"gelu_tanh",
     {transposed_leaf({3, 4}, 1, -3.0, 3.0)},
     [](Inputs in) { return gelu(in[0], /*approximate=*/true); }},
    {"chain_broadcast",
     {leaf({3, 1}), leaf({4}, 2)},
     [](Inputs in) { return mul(tanh(in[0]), sigmoid(exp(in[1]))); }},
};

class ElementwiseGradcheck : public ::testing::TestWithParam<GradcheckCase> {};

TEST_P(ElementwiseGradcheck, MatchesFiniteDifferences) {
  expect_gradcheck(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Elementwise, ElementwiseGradcheck, ::testing::ValuesIn(kCases),
                         CaseName());

// maximum and minimum at ties: each operand gets half the gradient (as PyTorch).
TEST(ElementwiseTies, MaximumAndMinimumSplitTheGradientAtTies) {
  const Tensor a = from_vector<double>({1.0, 2.0, 3.0, -1.0}).requires_grad_();
  const Tensor b = from_vector<double>({1.0, 0.0, 3.0, 0.0}).requires_grad_();
  const Tensor g = from_vector<double>({2.0, 4.0, 6.0, 8.0});
  maximum(a, b).backward(g);
  EXPECT_EQ(a.grad().to_vector<double>(), (std::vector<double>{1.0, 4.0, 3.0, 0.0}));
  EXPECT_EQ(b.grad().to_vector<double>(), (std::vector<double>{1.0, 0.0, 3.0, 8.0}));
  a.set_grad(Tensor());
  b.set_grad(Tensor());
  minimum(a, b).backward(g);
  EXPECT_EQ(a.grad().to_vector<double>(), (std::vector<double>{1.0, 0.0, 3.0, 8.0}));
  EXPECT_EQ(b.grad().to_vector<double>(), (std::vector<double>{1.0, 4.0, 3.0, 0.0}));
}

}  // namespace

const std::vector<GradcheckCase>& elementwise_gradcheck_cases() {
  return kCases;
}

}  // namespace grove::autograd::testing
